// A node's own CPU capacity (Problem.nodes[].cpus): a node limited to c < 1 cores (a CFS quota of
// c·period per period, like the testbed's 0.5-CPU edge hosts) runs one task alone at full speed
// while the quota lasts, but tasks of one item that together want more CPU than the quota gives
// per period are throttled. The model is the quota's average: a token bucket per node, `burst` =
// c·period CPU-seconds deep, refilled at c per second, full when the item starts (items are sent
// one at a time, and a node idles between them). While a task runs the node takes a full core and
// the bucket drains at 1 − c per second; empty, the task runs at rate c. A node with c ≥ 1 is not
// limited by its own capacity (it runs one task at a time in the model; machines shared by several
// nodes are Problem.hostCores). The kernel refills once per period, so one delay is lumpier (up to
// a period) than this average.
//
// Execution times are profiled on the node, each call alone (from a full bucket): `workOf` turns a
// profiled time into the CPU it stands for, so a task alone takes exactly its profiled time again.
// Every task also costs its node CPU outside its execution time (`extra`: the runner taking its
// inputs and committing its outputs, measured per node as Problem.runnerCpuSec): taken from the
// bucket when the task starts; what the bucket cannot give then is waited for at the quota's rate.

/** The kernel's default CFS period (and Docker's), seconds. */
export const DEFAULT_CPU_PERIOD_SEC = 0.1;

/** Bucket content after a gap of `gap` seconds with the node idle. */
export function refill(tokens: number, gap: number, c: number, burst: number): number {
  return gap > 0 ? Math.min(burst, tokens + c * gap) : tokens;
}

/** Bucket content after the node was busy for `dur` seconds (throttled or not: it ends empty when throttled). */
export function drain(tokens: number, dur: number, c: number): number {
  return Math.max(0, tokens - (1 - c) * dur);
}

/**
 * Seconds a task needing `work` CPU-seconds takes when it starts with `tokens` in the bucket (the
 * runner's `extra` already taken: negative when the bucket could not give all of it).
 */
export function quotaDuration(work: number, tokens: number, c: number): number {
  if (tokens < 0) return (work - tokens) / c; // the runner's share first, then all of it at rate c
  const full = tokens / (1 - c); // seconds at full speed until the bucket is empty
  if (work <= full) return work;
  return full + (work - full) / c;
}

/** The CPU-seconds a task needs whose profiled time (alone, from a full bucket) was `profiled`. */
export function workOf(profiled: number, c: number, burst: number): number {
  const full = burst / (1 - c);
  if (profiled <= full) return profiled;
  return full + c * (profiled - full);
}

/**
 * Bucket content at time t on a node whose busy intervals (sorted, never overlapping) are given, a
 * task starting there taking `extra` (negative: short by that much); only intervals ending by t
 * count, each of which took `extra` too. Full at 0.
 */
export function tokensAt(starts: number[], finishes: number[], t: number, c: number, burst: number, extra = 0): number {
  let k = burst;
  let last = 0;
  for (let i = 0; i < starts.length; i++) {
    const f = finishes[i] as number;
    if (f > t) break;
    const s = starts[i] as number;
    k = drain(refill(k, s - last, c, burst) - extra, f - s, c);
    last = f;
  }
  return refill(k, t - last, c, burst) - extra;
}

/**
 * Earliest start >= ready of an idle gap on the node that holds the task for as long as the bucket
 * then makes it last (insertion slot search; tasks after the gap keep their durations).
 */
export function quotaSlot(starts: number[], finishes: number[], ready: number, work: number, c: number, burst: number, extra = 0): number {
  let k = burst;
  let last = 0;
  let t = ready;
  for (let i = 0; i < starts.length; i++) {
    const s = starts[i] as number;
    const f = finishes[i] as number;
    if (t <= s && t + quotaDuration(work, refill(k, t - last, c, burst) - extra, c) <= s) return t;
    k = drain(refill(k, s - last, c, burst) - extra, f - s, c);
    last = f;
    if (f > t) t = f;
  }
  return t;
}
