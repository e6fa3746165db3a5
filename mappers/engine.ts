// Shared state of the list schedulers: per-node busy timelines with insertion-based slot search,
// data-ready times that understand duplicated tasks, and conversion to a MapResult.
import type { Compiled } from './compile.js';
import { comm } from './compile.js';
import { quotaDuration, quotaSlot, tokensAt, workOf } from './cpu-quota.js';
import type { MapResult, Slot } from './result.js';

export interface Copy {
  node: number;
  start: number;
  finish: number;
}

export interface ListState {
  cp: Compiled;
  node: Int32Array;
  start: Float64Array;
  finish: Float64Array;
  /** Busy intervals per node, sorted; starts and finishes kept in parallel arrays. */
  busyStart: number[][];
  busyFinish: number[][];
  /** Extra copies per task (heft-dup only). */
  dups: Map<number, Copy[]>;
  /** Busy intervals per limiting host (Compiled.hostOf), unsorted, overlapping up to its cores. */
  hostStart: number[][];
  hostFinish: number[][];
}

export function createState(cp: Compiled): ListState {
  return {
    cp,
    node: new Int32Array(cp.T).fill(-1),
    start: new Float64Array(cp.T),
    finish: new Float64Array(cp.T),
    busyStart: Array.from({ length: cp.P }, () => []),
    busyFinish: Array.from({ length: cp.P }, () => []),
    dups: new Map(),
    hostStart: Array.from({ length: cp.H }, () => []),
    hostFinish: Array.from({ length: cp.H }, () => []),
  };
}

/** When the output of scheduled predecessor u (any copy) reaches node p. */
export function arrival(st: ListState, u: number, bytes: number, p: number): number {
  const cp = st.cp;
  let best = (st.finish[u] as number) + comm(cp, bytes, st.node[u] as number, p);
  const copies = st.dups.size ? st.dups.get(u) : undefined;
  if (copies) {
    for (const c of copies) {
      const v = c.finish + comm(cp, bytes, c.node, p);
      if (v < best) best = v;
    }
  }
  return best;
}

/** Earliest time all inputs of t are on node p (its predecessors must be scheduled). */
export function dataReady(st: ListState, t: number, p: number): number {
  const cp = st.cp;
  let ready = cp.srcReady[t * cp.P + p] as number;
  const end = cp.predStart[t + 1] as number;
  if (st.dups.size === 0) {
    // Hot loop of HEFT: inline the transfer model (the diagonal holds the same-node hop cost).
    const P = cp.P;
    for (let i = cp.predStart[t] as number; i < end; i++) {
      const u = cp.predTask[i] as number;
      const q = st.node[u] as number;
      let v = st.finish[u] as number;
      const b = cp.predBytes[i] as number;
      const k = q * P + p;
      const c = (cp.linkA[k] as number) * b * b + (cp.linkB[k] as number) * b + (cp.linkC[k] as number);
      if (c > 0) v += c;
      if (v > ready) ready = v;
    }
    return ready;
  }
  for (let i = cp.predStart[t] as number; i < end; i++) {
    const v = arrival(st, cp.predTask[i] as number, cp.predBytes[i] as number, p);
    if (v > ready) ready = v;
  }
  return ready;
}

/** Earliest start >= ready of an idle gap of length dur on the given busy timeline. */
export function findSlotIn(starts: number[], finishes: number[], ready: number, dur: number): number {
  // First interval that ends after `ready` (finishes are sorted: intervals never overlap).
  let lo = 0;
  let hi = finishes.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((finishes[mid] as number) <= ready) lo = mid + 1;
    else hi = mid;
  }
  let t = ready;
  for (let i = lo; i < starts.length; i++) {
    if (t + dur <= (starts[i] as number)) return t;
    const f = finishes[i] as number;
    if (f > t) t = f;
  }
  return t;
}

/**
 * When [t, t+dur) fits on a host already running the given intervals with `cap` cores: -1 if it
 * fits, else the earliest finish after t among the intervals in the way. No start between t and
 * that finish can fit (every interval that fills the host somewhere in the window still runs
 * then), so a search may jump there.
 */
export function hostBlocked(starts: number[], finishes: number[], cap: number, t: number, dur: number): number {
  const end = t + Math.max(dur, 0);
  let next = Infinity;
  const points = [t];
  for (let i = 0; i < starts.length; i++) {
    const s = starts[i] as number;
    const f = finishes[i] as number;
    if (f <= t || (s >= end && dur > 0) || (dur <= 0 && s > t)) continue;
    if (f < next) next = f;
    if (s > t) points.push(s);
  }
  for (const x of points) {
    let n = 0;
    for (let i = 0; i < starts.length; i++) if ((starts[i] as number) <= x && (finishes[i] as number) > x) n++;
    if (n >= cap) return next;
  }
  return -1;
}

/** Earliest start >= ready where node p is idle for dur and its host (if limiting) has a free core. */
export function findSlotShared(st: ListState, p: number, ready: number, dur: number): number {
  const ns = st.busyStart[p] as number[];
  const nf = st.busyFinish[p] as number[];
  let t = findSlotIn(ns, nf, ready, dur);
  const h = st.cp.hostOf[p] as number;
  if (h < 0) return t;
  for (;;) {
    const u = hostBlocked(st.hostStart[h] as number[], st.hostFinish[h] as number[], st.cp.hostCap[h] as number, t, dur);
    if (u < 0) return t;
    t = findSlotIn(ns, nf, u, dur);
  }
}

/**
 * How long a task of profiled time `dur` lasts when it starts at `start` on node p: `dur`, except on
 * a node limited by its own CPU capacity, where the tasks already there before `start` may have
 * used up its quota (cpu-quota.ts).
 */
export function durationAt(st: ListState, p: number, start: number, dur: number): number {
  const cp = st.cp;
  const c = cp.cpuCap[p] as number;
  if (c === 0 || dur === Infinity) return dur;
  const burst = cp.cpuBurst[p] as number;
  const extra = cp.cpuExtra[p] as number;
  return quotaDuration(workOf(dur, c, burst), tokensAt(st.busyStart[p] as number[], st.busyFinish[p] as number[], start, c, burst, extra), c);
}

/**
 * Earliest start >= ready on a node limited by its own CPU capacity (busy intervals ns/nf; c
 * cores, `burst` CPU-seconds deep, `extra` per task: cpu-quota.ts) for a task needing `work`
 * CPU-seconds, and how long it lasts when it starts there: the gap must hold it as long as the
 * quota makes it last, and its host (`host`, when it limits) must have a core free meanwhile.
 * Shared by the list schedulers (findSlot) and the simulator.
 */
export function quotaHostSlot(
  ns: number[], nf: number[], host: { starts: number[]; finishes: number[]; cap: number } | undefined,
  ready: number, work: number, c: number, burst: number, extra: number,
): { start: number; dur: number } {
  let t = quotaSlot(ns, nf, ready, work, c, burst, extra);
  for (;;) {
    const d = quotaDuration(work, tokensAt(ns, nf, t, c, burst, extra), c);
    const u = host ? hostBlocked(host.starts, host.finishes, host.cap, t, d) : -1;
    if (u < 0) return { start: t, dur: d };
    t = quotaSlot(ns, nf, u, work, c, burst, extra);
  }
}

/** findSlotShared on a node limited by its own CPU capacity: gaps must hold the task as long as the quota makes it last. */
function findSlotQuota(st: ListState, p: number, ready: number, dur: number): number {
  const cp = st.cp;
  const c = cp.cpuCap[p] as number;
  const burst = cp.cpuBurst[p] as number;
  const h = cp.hostOf[p] as number;
  const host = h < 0 ? undefined : { starts: st.hostStart[h] as number[], finishes: st.hostFinish[h] as number[], cap: cp.hostCap[h] as number };
  return quotaHostSlot(st.busyStart[p] as number[], st.busyFinish[p] as number[], host, ready, workOf(dur, c, burst), c, burst, cp.cpuExtra[p] as number).start;
}

export function findSlot(st: ListState, p: number, ready: number, dur: number): number {
  if (st.cp.Q > 0 && (st.cp.cpuCap[p] as number) > 0 && dur !== Infinity) return findSlotQuota(st, p, ready, dur);
  if (st.cp.H > 0) return findSlotShared(st, p, ready, dur);
  return findSlotIn(st.busyStart[p] as number[], st.busyFinish[p] as number[], ready, dur);
}

/** Mark [start, finish) busy on node p's host too, when that host limits. */
export function occupyHost(st: ListState, p: number, start: number, finish: number): void {
  const h = st.cp.hostOf[p] as number;
  if (h < 0) return;
  (st.hostStart[h] as number[]).push(start);
  (st.hostFinish[h] as number[]).push(finish);
}

/** Mark [start, finish) busy on node p. */
export function occupy(starts: number[], finishes: number[], start: number, finish: number): void {
  let i = starts.length;
  while (i > 0 && (starts[i - 1] as number) > start) i--;
  starts.splice(i, 0, start);
  finishes.splice(i, 0, finish);
}

export function place(st: ListState, t: number, p: number, start: number): void {
  const finish = start + durationAt(st, p, start, st.cp.exec[t * st.cp.P + p] as number);
  st.node[t] = p;
  st.start[t] = start;
  st.finish[t] = finish;
  occupy(st.busyStart[p] as number[], st.busyFinish[p] as number[], start, finish);
  occupyHost(st, p, start, finish);
}

/**
 * Best insertion-based (start, finish) of t over the allowed nodes, a sink task's output counted
 * until it is home; ties -> lowest node index.
 */
export function bestEft(st: ListState, t: number, allowed?: (p: number) => boolean): { p: number; start: number; finish: number } {
  const cp = st.cp;
  let bp = -1;
  let bs = Infinity;
  let bf = Infinity;
  for (let p = 0; p < cp.P; p++) {
    const w = cp.exec[t * cp.P + p] as number;
    if (w === Infinity || (allowed && !allowed(p))) continue;
    const s = findSlot(st, p, dataReady(st, t, p), w);
    const f = s + durationAt(st, p, s, w);
    if (f + (cp.sinkCost[t * cp.P + p] as number) < bf + (bp < 0 ? 0 : (cp.sinkCost[t * cp.P + bp] as number))) {
      bp = p;
      bs = s;
      bf = f;
    }
  }
  return { p: bp, start: bs, finish: bf };
}

export function toResult(st: ListState, mapper: string): MapResult {
  const cp = st.cp;
  const mapping: Record<string, string> = {};
  const schedule: Record<string, Slot> = {};
  let makespan = 0;
  for (let t = 0; t < cp.T; t++) {
    const name = cp.taskNames[t] as string;
    const node = cp.nodeNames[st.node[t] as number] as string;
    mapping[name] = node;
    schedule[name] = { node, start: st.start[t] as number, finish: st.finish[t] as number };
    const end = (st.finish[t] as number) + (cp.sinkCost[t * cp.P + (st.node[t] as number)] as number);
    if (end > makespan) makespan = end;
  }
  const duplicates = [];
  for (const [t, copies] of [...st.dups.entries()].sort((a, b) => a[0] - b[0])) {
    for (const c of copies) {
      duplicates.push({ task: cp.taskNames[t] as string, node: cp.nodeNames[c.node] as string, start: c.start, finish: c.finish });
      if (c.finish > makespan) makespan = c.finish;
    }
  }
  return { mapper, mapping, schedule, duplicates, makespan };
}

/**
 * Ready-list scheduling: repeatedly take the ready task with the highest priority (ties: earlier
 * in the topological order) and place it where `choose` says.
 */
export function readyListSchedule(
  st: ListState,
  prio: Float64Array,
  choose: (st: ListState, t: number) => { p: number; start: number },
): void {
  const cp = st.cp;
  const remaining = new Int32Array(cp.T);
  const ready: number[] = [];
  for (let t = 0; t < cp.T; t++) {
    remaining[t] = (cp.predStart[t + 1] as number) - (cp.predStart[t] as number);
    if (remaining[t] === 0) ready.push(t);
  }
  while (ready.length) {
    let bi = 0;
    for (let i = 1; i < ready.length; i++) {
      const a = ready[i] as number;
      const b = ready[bi] as number;
      if ((prio[a] as number) > (prio[b] as number) || (prio[a] === prio[b] && (cp.topoPos[a] as number) < (cp.topoPos[b] as number))) bi = i;
    }
    const t = ready[bi] as number;
    ready[bi] = ready[ready.length - 1] as number;
    ready.pop();
    const c = choose(st, t);
    place(st, t, c.p, c.start);
    for (let i = cp.succStart[t] as number; i < (cp.succStart[t + 1] as number); i++) {
      const s = cp.succTask[i] as number;
      if (--(remaining[s] as number) === 0) ready.push(s);
    }
  }
}
