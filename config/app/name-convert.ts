// name_convert.txt: `<task> <output_token> <input_token>` per line, plus a line starting with
// `input` for the global input. Used to map intermediate file names back to the original input.
// A task may appear more than once (the original's imgp app does): like the original's reader,
// the last line wins.
import { inputError } from '../errors.js';
import { contentLines } from './text.js';

export interface NameConvertEntry {
  output: string;
  input: string;
  line: number;
}

export function parseNameConvert(text: string, file: string): Map<string, NameConvertEntry> {
  const out = new Map<string, NameConvertEntry>();
  for (const { line, fields: f } of contentLines(text)) {
    if (f.length !== 3) {
      throw inputError(`expected 3 fields, got ${f.length}`, { file, line, hint: 'each line is `<task> <output_token> <input_token>` (the first line may start with `input`)' });
    }
    const [task, output, input] = f as [string, string, string];
    out.set(task, { output, input, line });
  }
  return out;
}
