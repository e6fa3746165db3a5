// nodes.txt (Jupiter's format): one node per line, `<name> <host> [legacy columns...]`, `home`
// first. Legacy columns (user, password) are ignored and never kept.
import { inputError } from '../errors.js';
import { HOME, SAFE_NAME } from '../types.js';
import { contentLines } from '../app/text.js';

export interface NodeLine {
  name: string;
  host: string;
  line: number;
}

export const HOST_NAME = /^[A-Za-z0-9._:[\]-]{1,253}$/;

export function parseNodesTxt(text: string, file: string): NodeLine[] {
  const nodes: NodeLine[] = [];
  for (const { line, fields: f } of contentLines(text)) {
    if (f.length < 2) {
      throw inputError(`expected \`<name> <host>\`, got ${JSON.stringify(f[0] ?? '')}`, { file, line, hint: 'each line is `<node name> <host name or IP>`; the first is the home' });
    }
    const [name, host] = f as [string, string];
    if (!SAFE_NAME.test(name) || name.length > 64) {
      throw inputError(`node name ${JSON.stringify(name)} is not allowed`, { file, line, hint: "use letters, digits, '_', '.', '-' (starting with a letter or digit)" });
    }
    if (!HOST_NAME.test(host)) throw inputError(`host ${JSON.stringify(host)} of ${name} is not a host name or IP address`, { file, line, hint: 'write `<name> <host>`, e.g. `node2 10.0.0.12`' });
    if (nodes.length === 0 && name !== HOME) {
      throw inputError(`the first node must be ${HOME}, got ${name}`, { file, line, hint: `put \`${HOME} <host>\` on the first line: the home feeds inputs and collects outputs` });
    }
    const dup = nodes.find((n) => n.name === name);
    if (dup) throw inputError(`node ${name} is listed twice (first on line ${dup.line})`, { file, line, hint: 'list each node once' });
    nodes.push({ name, host, line });
  }
  if (nodes.length === 0) throw inputError('no nodes listed', { file, line: 1, hint: `list \`${HOME} <host>\` first, then \`<node> <host>\` per compute node` });
  if (nodes.length === 1) throw inputError('no compute nodes: only the home is listed', { file, line: nodes[0]!.line, hint: 'add at least one `<node> <host>` line after the home' });
  return nodes;
}
