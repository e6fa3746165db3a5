// PEFT (Arabnejad and Barbosa, IEEE TPDS 2014): optimistic cost table
//   OCT(t, p) = max over successors s of min over nodes q of
//               [OCT(s, q) + w(s, q) + (q != p ? transfer(t->s, p -> q) : 0)],
// rank = mean of OCT(t, .) over the nodes t can run on; ready tasks by descending rank (ties: the
// topological order); node = argmin of insertion-based EFT(t, p) + OCT(t, p) (ties: lowest index).
// Like SAGA, the transfer uses the actual link p -> q instead of the paper's mean cost, because
// fog links are very unequal (a slow uplink is exactly what the lookahead should see).
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import type { Compiled } from '../compile.js';
import { comm, compile } from '../compile.js';
import { createState, dataReady, durationAt, findSlot, readyListSchedule, toResult } from '../engine.js';

export function optimisticCostTable(cp: Compiled): Float64Array {
  const { T, P } = cp;
  const oct = new Float64Array(T * P);
  for (let k = T - 1; k >= 0; k--) {
    const t = cp.topo[k] as number;
    for (let p = 0; p < P; p++) {
      let worst = 0;
      for (let i = cp.succStart[t] as number; i < (cp.succStart[t + 1] as number); i++) {
        const s = cp.succTask[i] as number;
        const bytes = cp.succBytes[i] as number;
        let best = Infinity;
        for (let q = 0; q < P; q++) {
          const w = cp.exec[s * P + q] as number;
          if (w === Infinity) continue;
          const v = (oct[s * P + q] as number) + w + comm(cp, bytes, p, q);
          if (v < best) best = v;
        }
        if (best > worst) worst = best;
      }
      oct[t * P + p] = worst;
    }
  }
  return oct;
}

export function peft(problem: Problem, _opts: MapperOptions = {}): MapResult {
  const cp = compile(problem);
  const { T, P } = cp;
  const oct = optimisticCostTable(cp);
  const rank = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    let sum = 0;
    let n = 0;
    for (let p = 0; p < P; p++) {
      if ((cp.exec[t * P + p] as number) === Infinity) continue;
      sum += oct[t * P + p] as number;
      n++;
    }
    rank[t] = n ? sum / n : 0;
  }
  const st = createState(cp);
  readyListSchedule(st, rank, (s, t) => {
    let bp = -1;
    let bs = 0;
    let bv = Infinity;
    for (let p = 0; p < P; p++) {
      const w = cp.exec[t * P + p] as number;
      if (w === Infinity) continue;
      const start = findSlot(s, p, dataReady(s, t, p), w);
      const v = start + durationAt(s, p, start, w) + (oct[t * P + p] as number);
      if (v < bv) {
        bv = v;
        bp = p;
        bs = start;
      }
    }
    return { p: bp, start: bs };
  });
  return toResult(st, 'peft');
}
