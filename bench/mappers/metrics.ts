// Schedule-quality metrics of the HEFT paper (Topcuoglu 2002, section 5.2).
import type { Problem } from '../../mappers/index.js';
import { compile } from '../../mappers/index.js';

/** Sum over the critical path (computed with each task's minimum cost, no transfers) of the minimum cost. */
export function cpMinLowerBound(problem: Problem): number {
  const cp = compile(problem);
  const minW = new Float64Array(cp.T);
  for (let t = 0; t < cp.T; t++) {
    let m = Infinity;
    for (let p = 0; p < cp.P; p++) m = Math.min(m, cp.exec[t * cp.P + p] as number);
    minW[t] = m;
  }
  const longest = new Float64Array(cp.T);
  let best = 0;
  for (const t of cp.topo) {
    let pre = 0;
    for (let i = cp.predStart[t] as number; i < (cp.predStart[t + 1] as number); i++) pre = Math.max(pre, longest[cp.predTask[i] as number] as number);
    longest[t] = pre + (minW[t] as number);
    best = Math.max(best, longest[t] as number);
  }
  return best;
}

/**
 * All tasks serially on the single best processor; a task that cannot run there (a pinned
 * source) counts with its own minimum cost.
 */
export function serialTime(problem: Problem): number {
  const cp = compile(problem);
  let best = Infinity;
  for (let p = 0; p < cp.P; p++) {
    let s = 0;
    for (let t = 0; t < cp.T; t++) {
      let w = cp.exec[t * cp.P + p] as number;
      if (w === Infinity) for (let q = 0; q < cp.P; q++) w = Math.min(w, cp.exec[t * cp.P + q] as number);
      s += w;
    }
    best = Math.min(best, s);
  }
  return best;
}
