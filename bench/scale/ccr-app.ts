// Generated apps of many no-op-sized Python tasks in Jupiter's app format, in the style of the
// original's ccrapp20 ... ccrapp200: a random layered DAG (the HEFT paper's shape generator in
// mappers/generators/), one script per task, FLAG true (one output to every child), joins with
// NUM_INPUTS = number of parents, tasks without children sending to home.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomDagShape } from '../../mappers/generators/random-dag.js';
import { createRng } from '../../mappers/prng.js';

export interface CcrAppOptions {
  tasks: number;
  seed?: number;
  /** Shape of the DAG (HEFT paper's alpha; > 1 wide and short). */
  alpha?: number;
  outDegree?: number;
}

/** A no-op-sized task: one small output `<job>_<task>.txt` naming its inputs. */
function taskSource(name: string): string {
  return [
    `"""Generated task ${name}: writes one small file naming its inputs (FLAG true: to every child)."""`,
    'import os',
    '',
    `TASK = "${name}"`,
    '',
    '',
    'def task(filename, pathin, pathout):',
    '    names = [filename] if isinstance(filename, str) else list(filename)',
    '    base = os.path.basename(names[0])',
    '    job = base.split("_", 1)[0] if "_" in base else base.split(".", 1)[0]',
    '    out = os.path.join(pathout, "%s_%s.txt" % (job, TASK))',
    '    with open(out, "w") as f:',
    '        f.write("%s <- %s\\n" % (TASK, ",".join(sorted(names))))',
    '    return [out]',
    '',
  ].join('\n');
}

/** Write the app into <parent>/<name>/ and return its folder. */
export function writeCcrApp(parent: string, name: string, opts: CcrAppOptions): string {
  const v = opts.tasks;
  const rng = createRng(opts.seed ?? 1);
  // One entry task fans out to the generated graph's entry level, as the original's apps do.
  const shape = randomDagShape(rng, v - 1, opts.alpha ?? 2, opts.outDegree ?? 3);
  const names = Array.from({ length: v }, (_, i) => `task${i}`);
  const children = new Map<number, number[]>(names.map((_, i) => [i, []]));
  const parents = new Map<number, number>(names.map((_, i) => [i, 0]));
  const link = (a: number, b: number): void => {
    children.get(a)!.push(b);
    parents.set(b, parents.get(b)! + 1);
  };
  for (const t of shape.levels[0]!) link(0, t + 1);
  for (const [a, b] of shape.edges) link(a + 1, b + 1);
  const dir = join(parent, name);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  const lines = names.map((t, i) => {
    const cs = children.get(i)!.map((c) => names[c]!);
    return `${t} ${Math.max(1, parents.get(i)!)} true ${cs.length ? cs.join(' ') : 'home'}`;
  });
  writeFileSync(join(dir, 'configuration.txt'), `${v}\n${lines.join('\n')}\n`);
  for (const t of names) writeFileSync(join(dir, 'scripts', `${t}.py`), taskSource(t));
  writeFileSync(join(dir, 'scripts', 'config.json'), `${JSON.stringify({
    taskname_map: Object.fromEntries(names.map((t) => [t, [t, true]])),
    exec_profiler: Object.fromEntries(names.map((t) => [t, true])),
  }, null, 2)}\n`);
  writeFileSync(join(dir, 'sample_input', '1input.txt'), 'sample\n');
  return dir;
}
