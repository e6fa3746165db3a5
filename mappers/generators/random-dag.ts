// Random task graphs with the parameters of the HEFT paper (Topcuoglu et al. 2002, section 5.1):
// v tasks; shape alpha (height drawn uniformly with mean sqrt(v)/alpha, level widths with mean
// alpha*sqrt(v)); out-degree (each task gets 1..outDegree children in later levels, mostly the
// next one); CCR (mean transfer / mean execution time); heterogeneity beta (task i has mean cost
// w_i ~ U[0, 2*wDag], and cost U[w_i(1 - beta/2), w_i(1 + beta/2)] on each processor).
// Links are homogeneous (latency 0, 1e6 bytes/s) so that bytes / 1e6 = the paper's comm cost.
import type { Problem } from '../problem.js';
import type { Rng } from '../prng.js';
import { createRng } from '../prng.js';

export interface DagShape {
  /** level[t] of each task t0..t(v-1) */
  levels: number[][];
  edges: Array<[number, number]>;
}

/** The layered shape: tasks numbered level by level; every non-entry task has a parent. */
export function randomDagShape(rng: Rng, v: number, alpha: number, outDegree: number): DagShape {
  const meanH = Math.sqrt(v) / alpha;
  const h = Math.max(1, Math.min(v, Math.round(rng.range(1, Math.max(1, 2 * meanH - 1)))));
  const meanW = alpha * Math.sqrt(v);
  const weight = Array.from({ length: h }, () => rng.range(1, Math.max(1, 2 * meanW - 1)));
  const size = Array<number>(h).fill(1);
  const total = weight.reduce((a, b) => a + b, 0);
  for (let k = h; k < v; k++) {
    let x = rng.next() * total;
    let l = 0;
    while (l < h - 1 && x >= (weight[l] as number)) x -= weight[l++] as number;
    (size[l] as number)++;
  }
  const levels: number[][] = [];
  let id = 0;
  for (let l = 0; l < h; l++) levels.push(Array.from({ length: size[l] as number }, () => id++));
  const edges: Array<[number, number]> = [];
  const seen = new Set<number>();
  const hasParent = new Uint8Array(v);
  for (let l = 0; l < h - 1; l++) {
    const later = levels.slice(l + 1).flat();
    const next = levels[l + 1] as number[];
    for (const t of levels[l] as number[]) {
      const d = Math.min(later.length, 1 + rng.int(Math.max(1, outDegree)));
      for (let k = 0, tries = 0; k < d && tries < 20 * d; tries++) {
        const pool = rng.next() < 0.7 ? next : later;
        const c = pool[rng.int(pool.length)] as number;
        if (seen.has(t * v + c)) continue;
        seen.add(t * v + c);
        edges.push([t, c]);
        hasParent[c] = 1;
        k++;
      }
    }
  }
  for (let l = 1; l < h; l++) {
    const prev = levels[l - 1] as number[];
    for (const c of levels[l] as number[]) {
      if (hasParent[c]) continue;
      const p = prev[rng.int(prev.length)] as number;
      edges.push([p, c]);
      seen.add(p * v + c);
    }
  }
  return { levels, edges };
}

export interface HeftPaperParams {
  v: number;
  ccr: number;
  alpha: number;
  outDegree: number;
  beta: number;
  /** Number of processors. */
  procs: number;
  seed: number;
  /** Mean computation cost of the graph (default 50). */
  wDag?: number;
}

const BANDWIDTH = 1e6;

export function heftPaperInstance(params: HeftPaperParams): Problem {
  const rng = createRng(params.seed);
  const { v, beta, procs } = params;
  const wDag = params.wDag ?? 50;
  const shape = randomDagShape(rng, v, params.alpha, params.outDegree);
  const tasks = Array.from({ length: v }, (_, i) => `t${i}`);
  const nodes = Array.from({ length: procs }, (_, i) => ({ name: `p${i}` }));
  const exec: Problem['exec'] = {};
  for (const t of tasks) {
    const wi = rng.range(0.02, 2) * wDag;
    const row: Record<string, number> = {};
    for (const n of nodes) row[n.name] = rng.range(wi * (1 - beta / 2), wi * (1 + beta / 2));
    exec[t] = row;
  }
  const edges = shape.edges.map(([a, b]) => ({
    from: tasks[a] as string,
    to: tasks[b] as string,
    bytes: Math.round(rng.range(0, 2 * params.ccr * wDag) * BANDWIDTH),
  }));
  return { tasks, edges, nodes, exec, links: [], defaultLink: { latencySec: 0, bandwidthBytesPerSec: BANDWIDTH } };
}
