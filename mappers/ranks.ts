// Priorities of list schedulers: HEFT's upward rank and CPOP's downward rank (Topcuoglu 2002).
import type { Compiled } from './compile.js';
import { meanComm } from './compile.js';

/** rank_u(t) = mean exec(t) + max over successors s of (mean comm(t,s) + rank_u(s)), and of t's mean sink hop. */
export function upwardRanks(cp: Compiled): Float64Array {
  const rank = new Float64Array(cp.T);
  for (let k = cp.T - 1; k >= 0; k--) {
    const t = cp.topo[k] as number;
    let best = cp.meanSink[t] as number;
    for (let i = cp.succStart[t] as number; i < (cp.succStart[t + 1] as number); i++) {
      const v = meanComm(cp, cp.succBytes[i] as number) + (rank[cp.succTask[i] as number] as number);
      if (v > best) best = v;
    }
    rank[t] = (cp.meanExec[t] as number) + best;
  }
  return rank;
}

/** rank_d(t) = max over predecessors u of (rank_d(u) + mean exec(u) + mean comm(u,t)), and t's mean source hop. */
export function downwardRanks(cp: Compiled): Float64Array {
  const rank = new Float64Array(cp.T);
  for (let k = 0; k < cp.T; k++) {
    const t = cp.topo[k] as number;
    let best = cp.meanSrc[t] as number;
    for (let i = cp.predStart[t] as number; i < (cp.predStart[t + 1] as number); i++) {
      const u = cp.predTask[i] as number;
      const v = (rank[u] as number) + (cp.meanExec[u] as number) + meanComm(cp, cp.predBytes[i] as number);
      if (v > best) best = v;
    }
    rank[t] = best;
  }
  return rank;
}

/**
 * Tasks by descending priority. Ties go to the earlier task in the topological order (Kahn,
 * lowest problem index first), which also keeps every parent ahead of its children when a
 * zero-cost parent ties with a child.
 */
export function orderByPriority(cp: Compiled, prio: Float64Array): Int32Array {
  const idx = Array.from(cp.topo);
  idx.sort((a, b) => (prio[b] as number) - (prio[a] as number) || (cp.topoPos[a] as number) - (cp.topoPos[b] as number));
  return Int32Array.from(idx);
}
