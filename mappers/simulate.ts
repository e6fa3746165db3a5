// Predict the schedule of any mapping under the same model the mappers use.
//
// Default policy 'non-delay' (what a runtime that never idles does, no insertion): repeatedly
// start, among the tasks whose predecessors have all been started, the one that can start
// earliest on its mapped node (max of its data-ready time and the node's free time); ties go to
// the larger upward rank, then the earlier task in the topological order. Tasks on one node never
// overlap and a node runs them in the order they are started.
// Policy 'insertion': tasks in HEFT's order (descending upward rank), each put into the earliest
// idle gap of its node; for HEFT's own mapping this reproduces HEFT's schedule exactly.
// Duplicates are not simulated: the mapping has one copy of each task.
import type { Mapping } from '../config/types.js';
import { inputError } from '../config/errors.js';
import type { Problem } from './problem.js';
import type { Compiled } from './compile.js';
import { comm, compile } from './compile.js';
import type { MapResult } from './result.js';
import { createState, dataReady, findSlot, hostBlocked, place, quotaHostSlot, toResult } from './engine.js';
import { orderByPriority, upwardRanks } from './ranks.js';
import { drain, quotaDuration, refill } from './cpu-quota.js';

export type SimPolicy = 'non-delay' | 'insertion';

const rankCache = new WeakMap<Compiled, { rank: Float64Array; order: Int32Array }>();

export function heftOrder(cp: Compiled): { rank: Float64Array; order: Int32Array } {
  let hit = rankCache.get(cp);
  if (!hit) {
    const rank = upwardRanks(cp);
    hit = { rank, order: orderByPriority(cp, rank) };
    rankCache.set(cp, hit);
  }
  return hit;
}

/**
 * A fast makespan function for repeated evaluation (local search): buffers are reused, nothing
 * is allocated per call. `nodeOf[t]` is the node index of task t.
 */
export function makeEvaluator(cp: Compiled, policy: SimPolicy): (nodeOf: Int32Array) => number {
  const { T, P } = cp;
  const { rank, order } = heftOrder(cp);
  const start = new Float64Array(T);
  const finish = new Float64Array(T);
  const readyAt = new Float64Array(T);
  const remaining = new Int32Array(T);
  const nodeFree = new Float64Array(P);
  const list = new Int32Array(T);
  const inputsReady = (nodeOf: Int32Array, t: number): number => {
    const p = nodeOf[t] as number;
    let r = cp.srcReady[t * P + p] as number;
    for (let i = cp.predStart[t] as number; i < (cp.predStart[t + 1] as number); i++) {
      const u = cp.predTask[i] as number;
      const v = (finish[u] as number) + comm(cp, cp.predBytes[i] as number, nodeOf[u] as number, p);
      if (v > r) r = v;
    }
    return r;
  };
  if (policy === 'insertion') {
    const bs: number[][] = Array.from({ length: P }, () => []);
    const bf: number[][] = Array.from({ length: P }, () => []);
    const hs: number[][] = Array.from({ length: cp.H }, () => []);
    const hf: number[][] = Array.from({ length: cp.H }, () => []);
    return (nodeOf) => {
      for (let p = 0; p < P; p++) {
        (bs[p] as number[]).length = 0;
        (bf[p] as number[]).length = 0;
      }
      for (let h = 0; h < cp.H; h++) {
        (hs[h] as number[]).length = 0;
        (hf[h] as number[]).length = 0;
      }
      let makespan = 0;
      for (let k = 0; k < T; k++) {
        const t = order[k] as number;
        const p = nodeOf[t] as number;
        let w = cp.exec[t * P + p] as number;
        const h = cp.hostOf[p] as number;
        let s: number;
        if ((cp.cpuCap[p] as number) > 0) {
          // A node with a CPU quota: the slot and duration the engine's findSlot and place give.
          const ns = bs[p] as number[];
          const nf = bf[p] as number[];
          const host = h < 0 ? undefined : { starts: hs[h] as number[], finishes: hf[h] as number[], cap: cp.hostCap[h] as number };
          ({ start: s, dur: w } = quotaHostSlot(ns, nf, host, inputsReady(nodeOf, t), cp.work[t * P + p] as number, cp.cpuCap[p] as number, cp.cpuBurst[p] as number, cp.cpuExtra[p] as number));
          if (host) {
            host.starts.push(s);
            host.finishes.push(s + w);
          }
          let j = ns.length;
          while (j > 0 && (ns[j - 1] as number) > s) j--;
          ns.splice(j, 0, s);
          nf.splice(j, 0, s + w);
        } else if (h < 0) s = slot(bs[p] as number[], bf[p] as number[], inputsReady(nodeOf, t), w);
        else {
          // The node's earliest gap where its host also has a core free (see findSlotShared).
          const cap = cp.hostCap[h] as number;
          let r = inputsReady(nodeOf, t);
          for (;;) {
            s = gap(bs[p] as number[], bf[p] as number[], r, w);
            const u = hostBlocked(hs[h] as number[], hf[h] as number[], cap, s, w);
            if (u < 0) break;
            r = u;
          }
          slot(bs[p] as number[], bf[p] as number[], s, w);
          (hs[h] as number[]).push(s);
          (hf[h] as number[]).push(s + w);
        }
        finish[t] = s + w;
        const end = s + w + (cp.sinkCost[t * P + p] as number);
        if (end > makespan) makespan = end;
      }
      return makespan;
    };
  }
  // Shared hosts: when each of a host's cores is next free (a task takes the earliest one).
  const coreFree: Float64Array[] = Array.from({ length: cp.H }, (_, h) => new Float64Array(cp.hostCap[h] as number));
  // Nodes with a CPU quota: the bucket after each node's last task (cpu-quota.ts); a node runs its
  // tasks one after the other here, so that is all the engine's tokensAt would fold.
  const tokens = new Float64Array(P);
  return (nodeOf) => {
    nodeFree.fill(0);
    for (const c of coreFree) c.fill(0);
    if (cp.Q > 0) tokens.set(cp.cpuBurst);
    let n = 0;
    for (let t = 0; t < T; t++) {
      remaining[t] = (cp.predStart[t + 1] as number) - (cp.predStart[t] as number);
      if (remaining[t] === 0) {
        readyAt[t] = cp.srcReady[t * P + (nodeOf[t] as number)] as number;
        list[n++] = t;
      }
    }
    let makespan = 0;
    for (let done = 0; done < T; done++) {
      let bi = 0;
      let bt = list[0] as number;
      let bsv = Math.max(readyAt[bt] as number, free(nodeOf[bt] as number));
      for (let i = 1; i < n; i++) {
        const t = list[i] as number;
        const s = Math.max(readyAt[t] as number, free(nodeOf[t] as number));
        if (s < bsv || (s === bsv && ((rank[t] as number) > (rank[bt] as number) || (rank[t] === rank[bt] && (cp.topoPos[t] as number) < (cp.topoPos[bt] as number))))) {
          bi = i;
          bt = t;
          bsv = s;
        }
      }
      list[bi] = list[--n] as number;
      const p = nodeOf[bt] as number;
      let f = bsv + (cp.exec[bt * P + p] as number);
      const c = cp.cpuCap[p] as number;
      if (c > 0) {
        const k = refill(tokens[p] as number, bsv - (nodeFree[p] as number), c, cp.cpuBurst[p] as number) - (cp.cpuExtra[p] as number);
        f = bsv + quotaDuration(cp.work[bt * P + p] as number, k, c);
        tokens[p] = drain(k, f - bsv, c);
      }
      start[bt] = bsv;
      finish[bt] = f;
      nodeFree[p] = f;
      takeCore(coreFree, cp, p, f);
      const end = f + (cp.sinkCost[bt * P + p] as number);
      if (end > makespan) makespan = end;
      for (let i = cp.succStart[bt] as number; i < (cp.succStart[bt + 1] as number); i++) {
        const s = cp.succTask[i] as number;
        if (--(remaining[s] as number) === 0) {
          readyAt[s] = inputsReady(nodeOf, s);
          list[n++] = s;
        }
      }
    }
    return makespan;
  };
  function free(p: number): number {
    const nf = nodeFree[p] as number;
    const h = cp.hostOf[p] as number;
    return h < 0 ? nf : Math.max(nf, earliestCore(coreFree[h] as Float64Array).at);
  }
}

/** The core of a host that is free first. */
function earliestCore(c: Float64Array): { i: number; at: number } {
  let i = 0;
  for (let k = 1; k < c.length; k++) if ((c[k] as number) < (c[i] as number)) i = k;
  return { i, at: c[i] as number };
}

/** A task on node p runs until f: on a shared host it holds the core that was free first. */
function takeCore(coreFree: Float64Array[], cp: Compiled, p: number, f: number): void {
  const h = cp.hostOf[p] as number;
  if (h < 0) return;
  const c = coreFree[h] as Float64Array;
  c[earliestCore(c).i] = f;
}

/** The earliest gap >= ready of length dur in a node's sorted busy list (without taking it). */
function gap(starts: number[], finishes: number[], ready: number, dur: number): number {
  let t = ready;
  let i = 0;
  while (i < finishes.length && (finishes[i] as number) <= ready) i++;
  for (; i < starts.length; i++) {
    if (t + dur <= (starts[i] as number)) break;
    if ((finishes[i] as number) > t) t = finishes[i] as number;
  }
  return t;
}

function slot(starts: number[], finishes: number[], ready: number, dur: number): number {
  const t = gap(starts, finishes, ready, dur);
  let j = starts.length;
  while (j > 0 && (starts[j - 1] as number) > t) j--;
  starts.splice(j, 0, t);
  finishes.splice(j, 0, t + dur);
  return t;
}

/** Full schedule of a mapping given as node indices. */
export function simulateCompiled(cp: Compiled, nodeOf: Int32Array, policy: SimPolicy = 'non-delay', mapper = 'simulated'): MapResult {
  const st = createState(cp);
  if (policy === 'insertion') {
    for (const t of heftOrder(cp).order) {
      const p = nodeOf[t] as number;
      place(st, t, p, findSlot(st, p, dataReady(st, t, p), cp.exec[t * cp.P + p] as number));
    }
    return toResult(st, mapper);
  }
  // Replay the non-delay policy with the evaluator's rule, recording every start.
  const { rank } = heftOrder(cp);
  const remaining = new Int32Array(cp.T);
  const readyAt = new Float64Array(cp.T);
  const nodeFree = new Float64Array(cp.P);
  const coreFree: Float64Array[] = Array.from({ length: cp.H }, (_, h) => new Float64Array(cp.hostCap[h] as number));
  const free = (p: number): number => {
    const h = cp.hostOf[p] as number;
    return h < 0 ? (nodeFree[p] as number) : Math.max(nodeFree[p] as number, earliestCore(coreFree[h] as Float64Array).at);
  };
  const list: number[] = [];
  for (let t = 0; t < cp.T; t++) {
    remaining[t] = (cp.predStart[t + 1] as number) - (cp.predStart[t] as number);
    if (remaining[t] === 0) {
      readyAt[t] = cp.srcReady[t * cp.P + (nodeOf[t] as number)] as number;
      list.push(t);
    }
  }
  while (list.length) {
    let bi = 0;
    let bsv = Infinity;
    for (let i = 0; i < list.length; i++) {
      const t = list[i] as number;
      const bt = list[bi] as number;
      const s = Math.max(readyAt[t] as number, free(nodeOf[t] as number));
      if (s < bsv || (s === bsv && ((rank[t] as number) > (rank[bt] as number) || (rank[t] === rank[bt] && (cp.topoPos[t] as number) < (cp.topoPos[bt] as number))))) {
        bi = i;
        bsv = s;
      }
    }
    const t = list[bi] as number;
    list[bi] = list[list.length - 1] as number;
    list.pop();
    const p = nodeOf[t] as number;
    place(st, t, p, bsv);
    nodeFree[p] = st.finish[t] as number;
    takeCore(coreFree, cp, p, st.finish[t] as number);
    for (let i = cp.succStart[t] as number; i < (cp.succStart[t + 1] as number); i++) {
      const s = cp.succTask[i] as number;
      if (--(remaining[s] as number) === 0) {
        readyAt[s] = dataReady(st, s, nodeOf[s] as number);
        list.push(s);
      }
    }
  }
  return toResult(st, mapper);
}

/** Mapping by name -> node indices; throws inputError on unknown names or impossible placements. */
export function mappingToIndices(cp: Compiled, mapping: Mapping): Int32Array {
  const nodeOf = new Int32Array(cp.T);
  for (let t = 0; t < cp.T; t++) {
    const name = cp.taskNames[t] as string;
    const node = mapping[name];
    if (node === undefined) throw inputError(`mapping: task "${name}" has no node`);
    const p = cp.nodeIndex.get(node);
    if (p === undefined) throw inputError(`mapping: task "${name}" is mapped to unknown node "${node}"`);
    if ((cp.exec[t * cp.P + p] as number) === Infinity) throw inputError(`mapping: task "${name}" cannot run on node "${node}" (no execution time)`);
    nodeOf[t] = p;
  }
  return nodeOf;
}

/** The schedule and makespan of a mapping (see the policies above). */
export function simulate(problem: Problem, mapping: Mapping, opts: { policy?: SimPolicy } = {}): MapResult {
  const cp = compile(problem);
  return simulateCompiled(cp, mappingToIndices(cp, mapping), opts.policy ?? 'non-delay');
}
