// input_node.txt: a header line (`task node`), then `<entry task> <node>` lines, tab- or
// space-separated: the node where the entry task should run (WAVE's starting point).
import { inputError } from '../errors.js';
import { checkName } from './configuration.js';
import { contentLines } from './text.js';

export interface InputNodeEntry {
  node: string;
  line: number;
}

export function parseInputNode(text: string, file: string): Map<string, InputNodeEntry> {
  const out = new Map<string, InputNodeEntry>();
  let headerSeen = false;
  for (const { line, raw, fields: f } of contentLines(text)) {
    if (f.length !== 2) {
      throw inputError(`expected 2 fields, got ${f.length}`, { file, line, hint: 'the first line is the header `task node`, then one `<entry task> <node>` line per entry task' });
    }
    if (!headerSeen) {
      if (f[0]!.toLowerCase() !== 'task' || f[1]!.toLowerCase() !== 'node') {
        throw inputError(`the first line must be the header "task node", got ${JSON.stringify(raw.trim().slice(0, 60))}`, {
          file, line, hint: 'add the header line `task node` above the entries',
        });
      }
      headerSeen = true;
      continue;
    }
    const [task, node] = f as [string, string];
    checkName(node, 'node', file, line);
    if (out.has(task)) throw inputError(`${task} appears twice (first on line ${out.get(task)!.line})`, { file, line, hint: 'one line per entry task' });
    out.set(task, { node, line });
  }
  return out;
}
