// CPU time of another process, for the benchmarks' per-process CPU columns.
import { readdirSync, readFileSync } from 'node:fs';
import { procStat } from '../circe/runtime/pid.js';

/** CPU time (user + system) of a process in µs, from /proc (Linux; NaN elsewhere or when gone). */
export function cpuUs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const f = procStat(pid);
    // fields 14 and 15 (utime, stime) in clock ticks of 10 ms; f[0] is field 3
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  } catch {
    return NaN;
  }
}

/** The live descendants of a process (children, grandchildren, ...), from /proc. */
export function descendants(pid: number): number[] {
  let kids: number[] = [];
  try {
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      kids.push(...readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    }
  } catch {
    kids = [];
  }
  return kids.flatMap((k) => [k, ...descendants(k)]);
}

/**
 * CPU time (µs) of a process and all its live descendants, by pid, so that a difference over a
 * run counts each process once even when some start or exit meanwhile (read both ends with the
 * same map: a pid missing at one end counts 0 there).
 */
export function treeCpuUs(pid: number | undefined): Map<number, number> {
  const out = new Map<number, number>();
  if (!pid) return out;
  for (const p of [pid, ...descendants(pid)]) {
    const us = cpuUs(p);
    if (Number.isFinite(us)) out.set(p, us);
  }
  return out;
}

/** CPU µs spent between two treeCpuUs() readings. */
export function treeCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  for (const [p, us] of after) sum += us - (before.get(p) ?? 0);
  return sum;
}
