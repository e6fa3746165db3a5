// CPOP (Topcuoglu 2002): priority = upward + downward rank. The critical path starts at the entry
// task of highest priority and follows, at each step, the first successor (problem order) whose
// priority equals |CP| (relative tolerance 1e-9). All critical-path tasks go to the one node with
// the smallest total execution time of the path (among nodes that can run all of them); the other
// tasks go to the node with the earliest finish time (insertion-based). Ready tasks are taken by
// highest priority, ties by the topological order.
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import { compile } from '../compile.js';
import { bestEft, createState, dataReady, findSlot, readyListSchedule, toResult } from '../engine.js';
import { downwardRanks, upwardRanks } from '../ranks.js';

export function cpop(problem: Problem, _opts: MapperOptions = {}): MapResult {
  const cp = compile(problem);
  const up = upwardRanks(cp);
  const down = downwardRanks(cp);
  const prio = new Float64Array(cp.T);
  for (let t = 0; t < cp.T; t++) prio[t] = (up[t] as number) + (down[t] as number);

  let cpLen = -Infinity;
  let first = -1;
  for (let t = 0; t < cp.T; t++) {
    if (cp.predStart[t] === cp.predStart[t + 1] && (prio[t] as number) > cpLen) {
      cpLen = prio[t] as number;
      first = t;
    }
  }
  const tol = 1e-9 * Math.max(1, Math.abs(cpLen));
  const onPath = new Uint8Array(cp.T);
  const path: number[] = [];
  for (let t = first; t >= 0;) {
    onPath[t] = 1;
    path.push(t);
    let next = -1;
    for (let i = cp.succStart[t] as number; i < (cp.succStart[t + 1] as number); i++) {
      const s = cp.succTask[i] as number;
      if (Math.abs((prio[s] as number) - cpLen) <= tol) {
        next = s;
        break;
      }
    }
    t = next;
  }
  let cpNode = -1;
  let cpSum = Infinity;
  for (let p = 0; p < cp.P; p++) {
    let sum = 0;
    for (const t of path) sum += cp.exec[t * cp.P + p] as number;
    if (sum < cpSum) {
      cpSum = sum;
      cpNode = p;
    }
  }

  const st = createState(cp);
  readyListSchedule(st, prio, (s, t) => {
    if (onPath[t] && cpNode >= 0) {
      const w = cp.exec[t * cp.P + cpNode] as number;
      return { p: cpNode, start: findSlot(s, cpNode, dataReady(s, t, cpNode), w) };
    }
    const b = bestEft(s, t);
    return { p: b.p, start: b.start };
  });
  return toResult(st, 'cpop');
}
