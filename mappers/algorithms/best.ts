// best: a portfolio plus local search. Every other mapper runs; each mapping is also re-simulated
// under both simulator policies; the lowest makespan wins (so best is never worse than any single
// mapper, by construction). Then a seeded late-acceptance hill climbing over the mapping (move one
// task to another node, or swap the nodes of two tasks), each candidate scored by the simulator
// (the better of the two policies), runs until the time budget (default 1 s) or `maxEvals`
// simulations are used up. Give maxEvals for results that do not depend on machine speed.
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import type { Compiled } from '../compile.js';
import { compile } from '../compile.js';
import { createRng } from '../prng.js';
import type { SimPolicy } from '../simulate.js';
import { makeEvaluator, simulateCompiled } from '../simulate.js';

export const DEFAULT_BUDGET_MS = 1000;
const HISTORY = 40;

type Portfolio = Array<(problem: Problem, opts?: MapperOptions) => MapResult>;

function indices(cp: Compiled, r: MapResult): Int32Array {
  const nodeOf = new Int32Array(cp.T);
  for (let t = 0; t < cp.T; t++) nodeOf[t] = cp.nodeIndex.get(r.mapping[cp.taskNames[t] as string] as string) as number;
  return nodeOf;
}

export function makeBest(portfolio: () => Portfolio) {
  return function best(problem: Problem, opts: MapperOptions = {}): MapResult {
    const cp = compile(problem);
    const seed = opts.seed ?? 1;
    const deadline = performance.now() + (opts.budgetMs ?? DEFAULT_BUDGET_MS);
    const maxEvals = opts.maxEvals ?? Infinity;
    const evalIns = makeEvaluator(cp, 'insertion');
    const evalNd = makeEvaluator(cp, 'non-delay');
    const score = (m: Int32Array): { v: number; policy: SimPolicy } => {
      const a = evalIns(m);
      const b = evalNd(m);
      return a <= b ? { v: a, policy: 'insertion' } : { v: b, policy: 'non-delay' };
    };

    let bestResult: MapResult | undefined;
    let bestNodes: Int32Array = new Int32Array(cp.T);
    let bestVal = Infinity;
    for (const mapper of portfolio()) {
      const r = mapper(problem, { ...opts, seed });
      const usable = r.duplicates.length === 0 || opts.allowDuplicates !== false;
      if (usable && (!bestResult || r.makespan < bestResult.makespan)) bestResult = { ...r, origin: r.mapper };
      const nodes = indices(cp, r);
      const s = score(nodes);
      if (s.v < bestVal) {
        bestVal = s.v;
        bestNodes = nodes;
      }
    }
    if (!bestResult || bestVal < bestResult.makespan) bestResult = { ...simulateCompiled(cp, bestNodes, score(bestNodes).policy), origin: 'portfolio re-simulated' };

    // Feasible nodes per task (moves never leave them).
    const feasible: number[][] = [];
    for (let t = 0; t < cp.T; t++) {
      const ok: number[] = [];
      for (let p = 0; p < cp.P; p++) if ((cp.exec[t * cp.P + p] as number) !== Infinity) ok.push(p);
      feasible.push(ok);
    }
    const movable = feasible.map((f, t) => (f.length > 1 ? t : -1)).filter((t) => t >= 0);
    let improvedBy = false;
    if (movable.length && cp.P > 1) {
      const rng = createRng(seed);
      const cur = bestNodes.slice();
      let curVal = bestVal;
      const hist = new Float64Array(HISTORY).fill(curVal);
      let evals = 0;
      while (evals < maxEvals) {
        if ((evals & 31) === 0 && performance.now() > deadline) break;
        const t = movable[rng.int(movable.length)] as number;
        const old = cur[t] as number;
        let t2 = -1;
        let old2 = -1;
        if (rng.next() < 0.2 && movable.length > 1) {
          // Swap two tasks' nodes when both can run on the other's node.
          t2 = movable[rng.int(movable.length)] as number;
          old2 = cur[t2] as number;
          if (t2 === t || old2 === old || (cp.exec[t * cp.P + old2] as number) === Infinity || (cp.exec[t2 * cp.P + old] as number) === Infinity) continue;
          cur[t] = old2;
          cur[t2] = old;
        } else {
          const f = feasible[t] as number[];
          let p = f[rng.int(f.length - 1)] as number;
          if (p === old) p = f[f.length - 1] as number;
          cur[t] = p;
        }
        const v = score(cur).v;
        evals++;
        const slot = evals % HISTORY;
        if (v <= curVal || v < (hist[slot] as number)) {
          curVal = v;
          if (v < bestVal) {
            bestVal = v;
            bestNodes = cur.slice();
            improvedBy = true;
          }
        } else {
          cur[t] = old;
          if (t2 >= 0) cur[t2] = old2;
        }
        hist[slot] = curVal;
      }
    }
    if (improvedBy && bestVal < bestResult.makespan) {
      bestResult = { ...simulateCompiled(cp, bestNodes, score(bestNodes).policy), origin: `${bestResult.origin ?? ''} + local search` };
    }
    return { ...bestResult, mapper: 'best' };
  };
}
