// The task every pipeline benchmark app runs: hand the input on unchanged (a rename, no copy),
// so what is measured is Jupiter, not the task. With BENCH_STAMPS_DIR set, each call also appends
// `<input name> <start s> <end s>` (wall clock, inside the task function) to a file of its
// process there: bench:peers measures every system's hops from these same stamps.

/** The stamping helper in Python, shared by the Jupiter task and bench:peers' Dask and Celery stages. */
export const STAMP_PYTHON_SOURCE = [
  'import os',
  'import time',
  '',
  '_STAMPS = os.environ.get("BENCH_STAMPS_DIR")',
  '_fd = None',
  '',
  'def stamp(key, t0):',
  '    global _fd',
  '    if not _STAMPS:',
  '        return',
  '    if _fd is None:',
  '        _fd = os.open(os.path.join(_STAMPS, "py-%d.log" % os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)',
  '    os.write(_fd, ("%s %.6f %.6f\\n" % (key, t0, time.time())).encode())',
  '',
].join('\n');

export const NOOP_TASK_SOURCE = [
  "import { closeSync, openSync, renameSync, writeSync } from 'node:fs';",
  "import { join } from 'node:path';",
  'const stamps = process.env.BENCH_STAMPS_DIR;',
  'let fd;',
  'export function task(inputs, pathin, pathout) {',
  '  const t0 = (performance.timeOrigin + performance.now()) / 1000;',
  '  const out = join(pathout, inputs[0]);',
  '  renameSync(join(pathin, inputs[0]), out);',
  '  if (stamps) {',
  "    fd ??= openSync(join(stamps, `js-${process.pid}.log`), 'a');",
  '    writeSync(fd, `${inputs[0]} ${t0.toFixed(6)} ${((performance.timeOrigin + performance.now()) / 1000).toFixed(6)}\\n`);',
  '  }',
  '  return [out];',
  '}',
  'process.on("exit", () => fd !== undefined && closeSync(fd));',
  '',
].join('\n');

/** The same no-op as a Python task with Jupiter's contract (BENCH_TASK=python). */
export const NOOP_PYTHON_SOURCE = STAMP_PYTHON_SOURCE + [
  '',
  'def task(filename, pathin, pathout):',
  '    t0 = time.time()',
  '    out = os.path.join(pathout, filename)',
  '    os.rename(os.path.join(pathin, filename), out)',
  '    stamp(filename, t0)',
  '    return [out]',
  '',
].join('\n');

/** bench:peers' stage for Dask and Celery: the item ([key, payload]) handed on unchanged. */
export const PEER_STAGE_SOURCE = STAMP_PYTHON_SOURCE + [
  '',
  'def stage(item):',
  '    t0 = time.time()',
  '    stamp(item[0], t0)',
  '    return item',
  '',
].join('\n');
