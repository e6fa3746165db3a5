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

/** The same no-op as a Python task with Jupiter's contract (BENCH_TASK=python). */
export const NOOP_PYTHON_SOURCE = [
  'import os',
  '',
  'def task(filename, pathin, pathout):',
  '    out = os.path.join(pathout, filename)',
  '    os.rename(os.path.join(pathin, filename), out)',
  '    return [out]',
  '',
].join('\n');
