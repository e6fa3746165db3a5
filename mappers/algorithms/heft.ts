// HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 2002): tasks by descending upward rank (mean execution
// time over the nodes a task can run on, mean transfer time over ordered node pairs p != q), each
// placed on the node giving the earliest finish time with insertion into idle gaps.
// Tie-breaking: equal ranks -> earlier in the topological order (Kahn, lowest problem index
// first); equal finish times -> the lowest node index (problem order).
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import type { Compiled } from '../compile.js';
import { compile } from '../compile.js';
import { bestEft, createState, place, toResult } from '../engine.js';
import { orderByPriority, upwardRanks } from '../ranks.js';

/** HEFT on a compiled problem; `allowed(t, p, count)` lets variants restrict nodes. */
export function heftCompiled(cp: Compiled, name = 'heft', cap?: number): MapResult {
  const st = createState(cp);
  const order = orderByPriority(cp, upwardRanks(cp));
  const count = new Int32Array(cp.P);
  for (const t of order) {
    let pick = cap === undefined ? bestEft(st, t) : bestEft(st, t, (p) => (count[p] as number) < cap);
    // A capped task that fits nowhere (every allowed node is full or cannot run it) ignores the cap.
    if (pick.p < 0) pick = bestEft(st, t);
    place(st, t, pick.p, pick.start);
    (count[pick.p] as number)++;
  }
  return toResult(st, name);
}

export function heft(problem: Problem, _opts: MapperOptions = {}): MapResult {
  return heftCompiled(compile(problem));
}
