// CPU time of another process, for the benchmarks' per-process CPU columns.
import { readFileSync } from 'node:fs';

/** CPU time (user + system) of a process in µs, from /proc (Linux; NaN elsewhere or when gone). */
export function cpuUs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14 and 15 (utime, stime) in clock ticks of 10 ms; f[0] is field 3
    return ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  } catch {
    return NaN;
  }
}
