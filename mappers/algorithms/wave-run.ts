// The WAVE protocol as a deterministic simulation: the home assigns the entry tasks; then, in the
// order tasks get assigned (first in, first out), the node holding a task places every child that
// task controls (control-relation order), skipping children already placed. The schedule of the
// final mapping comes from the simulator (non-delay policy).
import { HOME } from '../../config/types.js';
import type { Problem } from '../problem.js';
import type { MapResult } from '../result.js';
import { compile } from '../compile.js';
import { simulateCompiled } from '../simulate.js';
import { controlRelation } from '../wave.js';

/** `place(task, controllerNode, controllerTask)`: controllerNode is `home` for entry tasks. */
export type WavePlacer = (task: string, controllerNode: string, controllerTask: string) => string;

export function runWave(problem: Problem, name: string, placeFn: WavePlacer): MapResult {
  const cp = compile(problem);
  const rel = controlRelation(problem);
  const mapping: Record<string, string> = {};
  const queue: string[] = [];
  for (const t of rel.controls[HOME] ?? []) {
    mapping[t] = placeFn(t, HOME, HOME);
    queue.push(t);
  }
  for (let i = 0; i < queue.length; i++) {
    const t = queue[i] as string;
    for (const c of rel.controls[t] ?? []) {
      if (mapping[c] !== undefined) continue;
      mapping[c] = placeFn(c, mapping[t] as string, t);
      queue.push(c);
    }
  }
  const nodeOf = new Int32Array(cp.T);
  for (let t = 0; t < cp.T; t++) nodeOf[t] = cp.nodeIndex.get(mapping[cp.taskNames[t] as string] as string) as number;
  return simulateCompiled(cp, nodeOf, 'non-delay', name);
}

