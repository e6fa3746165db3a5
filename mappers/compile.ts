// Index a Problem into flat typed arrays once, so the algorithms' hot loops do no lookups by name.
import type { Problem } from './problem.js';
import { quadraticOf } from './problem.js';
import { DEFAULT_CPU_PERIOD_SEC, workOf } from './cpu-quota.js';

export interface Compiled {
  problem: Problem;
  /** Number of tasks and nodes. */
  T: number;
  P: number;
  taskNames: string[];
  nodeNames: string[];
  taskIndex: Map<string, number>;
  nodeIndex: Map<string, number>;
  /** exec[t*P + p] seconds; Infinity = cannot run there. */
  exec: Float64Array;
  /** Mean execution time of each task over the nodes it can run on. */
  meanExec: Float64Array;
  /** Predecessors in CSR form: for task t, indices predStart[t]..predStart[t+1]-1. */
  predStart: Int32Array;
  predTask: Int32Array;
  predBytes: Float64Array;
  succStart: Int32Array;
  succTask: Int32Array;
  succBytes: Float64Array;
  /**
   * Link coefficients per ordered pair p*P+q, the receiving node's hop overhead included in c; the
   * diagonal is the same-node transfer (0, or the hop overhead in c and the local hop's cost per
   * byte in b).
   */
  linkA: Float64Array;
  linkB: Float64Array;
  linkC: Float64Array;
  /** Mean coefficients over ordered pairs p != q (HEFT's mean communication cost). */
  meanA: number;
  meanB: number;
  meanC: number;
  /** A topological order: Kahn's algorithm, lowest problem index first. */
  topo: Int32Array;
  /** Position of each task in `topo`. */
  topoPos: Int32Array;
  /** Source hop: earliest start of task t on node p (home -> p transfer + hop overhead), t*P+p; 0 without one. */
  srcReady: Float64Array;
  /** Sink hop: seconds from t's finish on p until its output is home, t*P+p; 0 without one. */
  sinkCost: Float64Array;
  /** Means over the nodes t can run on (ranks). */
  meanSrc: Float64Array;
  meanSink: Float64Array;
  /** Resource figures (NaN = unknown). */
  cpu: Float64Array;
  mem: Float64Array;
  /**
   * Shared hosts that limit: hostOf[p] = index of node p's host, -1 when its host cannot hold
   * back its nodes (no host, no cores given, or at least as many cores as nodes on it);
   * hostCap[h] = its cores. H = 0: no limit anywhere (the plain per-node model).
   */
  H: number;
  hostOf: Int32Array;
  hostCap: Int32Array;
  /**
   * Nodes limited by their own CPU capacity (Problem.nodes[].cpus < 1, cpu-quota.ts): cpuCap[p] =
   * its cores, 0 when not limited; cpuBurst[p] = its quota per period (CPU-seconds); work[t*P+p] =
   * the CPU-seconds exec[t*P+p] stands for there (= exec elsewhere). Q = how many nodes are limited.
   */
  Q: number;
  /** CPU-seconds each task takes from its node's quota outside its execution time (Problem.runnerCpuSec, plus runnerCpuSecPerByte at the app's mean bytes in and out per task). */
  cpuExtra: Float64Array;
  cpuCap: Float64Array;
  cpuBurst: Float64Array;
  work: Float64Array;
}

const cache = new WeakMap<Problem, Compiled>();

/** Transfer seconds of `bytes` from node p to node q (on the same node: the hop overhead and the local hop's bytes), never negative. */
export function comm(cp: Compiled, bytes: number, p: number, q: number): number {
  const k = p * cp.P + q;
  const s = (cp.linkA[k] as number) * bytes * bytes + (cp.linkB[k] as number) * bytes + (cp.linkC[k] as number);
  return s > 0 ? s : 0;
}

/** Mean transfer seconds of `bytes` over all ordered pairs p != q. */
export function meanComm(cp: Compiled, bytes: number): number {
  if (cp.P < 2) return 0;
  const s = cp.meanA * bytes * bytes + cp.meanB * bytes + cp.meanC;
  return s > 0 ? s : 0;
}

/** Compile a (validated) problem; the result is cached per problem object. */
export function compile(problem: Problem): Compiled {
  const hit = cache.get(problem);
  if (hit) return hit;
  const taskNames = problem.tasks.slice();
  const nodeNames = problem.nodes.map((n) => n.name);
  const T = taskNames.length;
  const P = nodeNames.length;
  const taskIndex = new Map(taskNames.map((t, i) => [t, i]));
  const nodeIndex = new Map(nodeNames.map((n, i) => [n, i]));

  const invoke = Float64Array.from(nodeNames, (n) => problem.invokeOverheadSec?.[n] ?? 0);
  const hop = Float64Array.from(nodeNames, (n) => problem.hopOverheadSec?.[n] ?? 0);
  const localPerByte = Float64Array.from(nodeNames, (n) => problem.localHopSecPerByte?.[n] ?? 0);
  const exec = new Float64Array(T * P).fill(Infinity);
  const meanExec = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    const row = problem.exec[taskNames[t] as string] ?? {};
    let sum = 0;
    let n = 0;
    for (const [node, sec] of Object.entries(row)) {
      const p = nodeIndex.get(node);
      if (p === undefined) continue;
      exec[t * P + p] = sec + (invoke[p] as number);
      sum += exec[t * P + p] as number;
      n++;
    }
    meanExec[t] = n ? sum / n : Infinity;
  }

  const E = problem.edges.length;
  const predCount = new Int32Array(T + 1);
  const succCount = new Int32Array(T + 1);
  const ef = new Int32Array(E);
  const et = new Int32Array(E);
  problem.edges.forEach((e, i) => {
    const f = taskIndex.get(e.from) as number;
    const t = taskIndex.get(e.to) as number;
    ef[i] = f;
    et[i] = t;
    (predCount[t + 1] as number)++;
    (succCount[f + 1] as number)++;
  });
  for (let t = 0; t < T; t++) {
    predCount[t + 1] = (predCount[t + 1] as number) + (predCount[t] as number);
    succCount[t + 1] = (succCount[t + 1] as number) + (succCount[t] as number);
  }
  const predStart = predCount.slice();
  const succStart = succCount.slice();
  const predTask = new Int32Array(E);
  const predBytes = new Float64Array(E);
  const succTask = new Int32Array(E);
  const succBytes = new Float64Array(E);
  const pf = predStart.slice();
  const sf = succStart.slice();
  // Edges are placed in problem order of the other endpoint so iteration is deterministic.
  const order = Array.from({ length: E }, (_, i) => i).sort((x, y) => (ef[x] as number) - (ef[y] as number) || (et[x] as number) - (et[y] as number));
  for (const i of order) {
    const f = ef[i] as number;
    const t = et[i] as number;
    const b = (problem.edges[i] as { bytes: number }).bytes;
    const pi = (pf[t] as number)++;
    predTask[pi] = f;
    predBytes[pi] = b;
    const si = (sf[f] as number)++;
    succTask[si] = t;
    succBytes[si] = b;
  }

  const linkA = new Float64Array(P * P);
  const linkB = new Float64Array(P * P);
  const linkC = new Float64Array(P * P);
  const set = new Uint8Array(P * P);
  for (const l of problem.links) {
    const p = nodeIndex.get(l.from);
    const q = nodeIndex.get(l.to);
    if (p === undefined || q === undefined || p === q) continue;
    const m = quadraticOf(l.model);
    const k = p * P + q;
    linkA[k] = m.a;
    linkB[k] = m.b;
    linkC[k] = m.c;
    set[k] = 1;
  }
  const def = problem.defaultLink ? quadraticOf(problem.defaultLink) : { a: 0, b: 0, c: 0 };
  let sa = 0;
  let sb = 0;
  let sc = 0;
  for (let p = 0; p < P; p++) {
    for (let q = 0; q < P; q++) {
      const k = p * P + q;
      if (p === q) {
        linkA[k] = 0;
        linkB[k] = localPerByte[q] as number;
        linkC[k] = hop[q] as number;
        continue;
      }
      if (!set[k]) {
        linkA[k] = def.a;
        linkB[k] = def.b;
        linkC[k] = def.c;
      }
      linkC[k] = (linkC[k] as number) + (hop[q] as number);
      sa += linkA[k] as number;
      sb += linkB[k] as number;
      sc += linkC[k] as number;
    }
  }
  const pairs = P * (P - 1) || 1;

  // Kahn's algorithm, always releasing the lowest-index ready task (a tiny binary heap).
  const indeg = new Int32Array(T);
  for (let t = 0; t < T; t++) indeg[t] = (predStart[t + 1] as number) - (predStart[t] as number);
  const heap: number[] = [];
  const push = (v: number): void => {
    heap.push(v);
    let i = heap.length - 1;
    while (i > 0) {
      const up = (i - 1) >> 1;
      if ((heap[up] as number) <= v) break;
      heap[i] = heap[up] as number;
      i = up;
    }
    heap[i] = v;
  };
  const pop = (): number => {
    const top = heap[0] as number;
    const last = heap.pop() as number;
    if (heap.length) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) break;
        const r = l + 1;
        const c = r < heap.length && (heap[r] as number) < (heap[l] as number) ? r : l;
        if ((heap[c] as number) >= last) break;
        heap[i] = heap[c] as number;
        i = c;
      }
      heap[i] = last;
    }
    return top;
  };
  for (let t = 0; t < T; t++) if (indeg[t] === 0) push(t);
  const topo = new Int32Array(T);
  const topoPos = new Int32Array(T);
  let k = 0;
  while (heap.length) {
    const t = pop();
    topoPos[t] = k;
    topo[k++] = t;
    for (let i = succStart[t] as number; i < (succStart[t + 1] as number); i++) {
      const s = succTask[i] as number;
      if (--(indeg[s] as number) === 0) push(s);
    }
  }
  if (k !== T) throw new Error('compile: the task graph has a cycle (validate the problem first)');

  const srcReady = new Float64Array(T * P);
  const sinkCost = new Float64Array(T * P);
  const meanSrc = new Float64Array(T);
  const meanSink = new Float64Array(T);
  const home = problem.home;
  if (home) {
    const zero = { a: 0, b: 0, c: 0 };
    const toNode = nodeNames.map(() => (problem.defaultLink ? quadraticOf(problem.defaultLink) : zero));
    const toHome = toNode.slice();
    for (const l of home.links ?? []) {
      const p = nodeIndex.get(l.node);
      if (p === undefined) continue;
      toNode[p] = quadraticOf(l.toNode);
      toHome[p] = quadraticOf(l.toHome);
    }
    const cost = (m: { a: number; b: number; c: number }, b: number): number => Math.max(0, m.a * b * b + m.b * b + m.c);
    const fill = (list: Array<{ task: string; bytes: number }>, into: Float64Array, means: Float64Array, model: typeof toNode): void => {
      for (const h of list) {
        const t = taskIndex.get(h.task);
        if (t === undefined) continue;
        let sum = 0;
        let n = 0;
        for (let p = 0; p < P; p++) {
          const v = cost(model[p] as { a: number; b: number; c: number }, h.bytes) + (hop[p] as number);
          if (v > (into[t * P + p] as number)) into[t * P + p] = v;
          if ((exec[t * P + p] as number) !== Infinity) {
            sum += into[t * P + p] as number;
            n++;
          }
        }
        means[t] = n ? sum / n : 0;
      }
    };
    fill(home.sources, srcReady, meanSrc, toNode);
    fill(home.sinks, sinkCost, meanSink, toHome);
  }

  const cpu = new Float64Array(P);
  const mem = new Float64Array(P);
  problem.nodes.forEach((n, p) => {
    cpu[p] = n.cpuPercent ?? NaN;
    mem[p] = n.memPercent ?? NaN;
  });

  const hostOf = new Int32Array(P).fill(-1);
  const caps: number[] = [];
  const onHost = new Map<string, number[]>();
  problem.nodes.forEach((n, p) => {
    if (n.host !== undefined) onHost.set(n.host, [...(onHost.get(n.host) ?? []), p]);
  });
  for (const [h, ps] of onHost) {
    const cores = problem.hostCores?.[h];
    if (cores === undefined || cores >= ps.length) continue;
    for (const p of ps) hostOf[p] = caps.length;
    caps.push(Math.max(1, Math.floor(cores)));
  }

  const cpuCap = new Float64Array(P);
  const cpuBurst = new Float64Array(P);
  const work = exec.slice();
  // Bytes a task takes in and gives out, on the app's average: each edge's bytes leave one task
  // and enter another, the source's enter and the sink's leave once. A runner's CPU per byte
  // (storing outputs, copying inputs in) is charged per task at this mean, so the bucket keeps one
  // figure per node; a 1 MiB frame's way through a 0.5-CPU host's runners cost tens of ms there.
  let moved = 0;
  for (const e of problem.edges) moved += 2 * e.bytes;
  for (const h of [...(problem.home?.sources ?? []), ...(problem.home?.sinks ?? [])]) moved += h.bytes;
  const meanMoved = T ? moved / T : 0;
  const cpuExtra = Float64Array.from(nodeNames, (n) => (problem.runnerCpuSec?.[n] ?? 0) + (problem.runnerCpuSecPerByte?.[n] ?? 0) * meanMoved);
  const period = problem.cpuPeriodSec ?? DEFAULT_CPU_PERIOD_SEC;
  let Q = 0;
  problem.nodes.forEach((n, p) => {
    const c = n.cpus;
    if (c === undefined || !(c > 0) || c >= 1) return;
    Q++;
    cpuCap[p] = c;
    cpuBurst[p] = c * period;
    for (let t = 0; t < T; t++) {
      const w = exec[t * P + p] as number;
      if (w !== Infinity) work[t * P + p] = workOf(w, c, c * period);
    }
  });

  const cp: Compiled = {
    problem, T, P, taskNames, nodeNames, taskIndex, nodeIndex, exec, meanExec,
    predStart, predTask, predBytes, succStart, succTask, succBytes,
    linkA, linkB, linkC, meanA: sa / pairs, meanB: sb / pairs, meanC: sc / pairs,
    topo, topoPos, srcReady, sinkCost, meanSrc, meanSink, cpu, mem,
    H: caps.length, hostOf, hostCap: Int32Array.from(caps),
    Q, cpuExtra, cpuCap, cpuBurst, work,
  };
  cache.set(problem, cp);
  return cp;
}
