// The task every pipeline benchmark app runs: hand the input on unchanged (a rename, no copy),
// so what is measured is Jupiter, not the task.
export const NOOP_TASK_SOURCE = [
  "import { renameSync } from 'node:fs';",
  "import { join } from 'node:path';",
  'export function task(inputs, pathin, pathout) {',
  '  const out = join(pathout, inputs[0]);',
  '  renameSync(join(pathin, inputs[0]), out);',
  '  return [out];',
  '}',
  '',
].join('\n');
