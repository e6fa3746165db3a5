// Everything on the single node with the smallest total execution time: no transfers at all.
// Tasks run back to back in HEFT's upward-rank order. If no node can run every task, the tasks
// that cannot run on the chosen node go to their own fastest node and the schedule comes from
// the simulator.
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import { compile } from '../compile.js';
import { simulateCompiled } from '../simulate.js';

export function fastestNode(problem: Problem, _opts: MapperOptions = {}): MapResult {
  const cp = compile(problem);
  let best = 0;
  let bestSum = Infinity;
  let bestCount = -1;
  for (let p = 0; p < cp.P; p++) {
    let sum = 0;
    let count = 0;
    for (let t = 0; t < cp.T; t++) {
      const w = cp.exec[t * cp.P + p] as number;
      if (w !== Infinity) {
        sum += w;
        count++;
      }
    }
    // Prefer the node that can run the most tasks, then the smallest total.
    if (count > bestCount || (count === bestCount && sum < bestSum)) {
      best = p;
      bestSum = sum;
      bestCount = count;
    }
  }
  const nodeOf = new Int32Array(cp.T);
  for (let t = 0; t < cp.T; t++) {
    if ((cp.exec[t * cp.P + best] as number) !== Infinity) {
      nodeOf[t] = best;
      continue;
    }
    let bp = 0;
    for (let p = 1; p < cp.P; p++) if ((cp.exec[t * cp.P + p] as number) < (cp.exec[t * cp.P + bp] as number)) bp = p;
    nodeOf[t] = bp;
  }
  return { ...simulateCompiled(cp, nodeOf, 'insertion'), mapper: 'fastest-node' };
}
