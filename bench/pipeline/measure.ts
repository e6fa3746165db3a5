// Measuring tools shared by the pipeline benchmarks (bench:pipeline, bench:peers): percentiles,
// medians, CPU per item from /proc, Redis command counts, redis-benchmark's round trip.
import { execFileSync } from 'node:child_process';
import type { Redis } from 'ioredis';
import { percentile } from '../../circe/index.js';
import { cpuUs } from '../proc-cpu.js';

export const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};

export interface Lat {
  p50: number;
  p99: number;
}
export const stats = (xs: number[]): Lat => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50) ?? NaN, p99: percentile(s, 99) ?? NaN };
};
export const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU per item (µs) of named processes (a name may stand for several) over one measured run. */
export class CpuMeter {
  private start = new Map<string, number>();
  constructor(private readonly pids: () => Map<string, number | number[] | undefined>) {}
  private read(k: string, pid: number | number[] | undefined): number {
    if (k === 'driver') return this.self();
    return Array.isArray(pid) ? pid.reduce((a, p) => a + (cpuUs(p) || 0), 0) : cpuUs(pid);
  }
  begin(): void {
    this.start = new Map([...this.pids()].map(([k, pid]) => [k, this.read(k, pid)]));
  }
  private self(): number {
    const u = process.cpuUsage();
    return u.user + u.system;
  }
  end(items: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, pid] of this.pids()) out[k] = (this.read(k, pid) - (this.start.get(k) ?? NaN)) / items;
    return out;
  }
}

/** Redis commands per item since the last RESETSTAT (commands inside scripts count too). */
export async function redisCalls(redis: Redis, items: number): Promise<{ scripts: number; scriptUs: number; commands: number; top: string }> {
  const cs = await redis.info('commandstats');
  const rows = [...cs.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/g)].map((m) => ({ cmd: m[1]!, calls: Number(m[2]) / items, us: Number(m[3]) / items }));
  const isScript = (r: { cmd: string }): boolean => r.cmd === 'evalsha' || r.cmd === 'eval';
  const ignore = new Set(['evalsha', 'eval', 'info', 'config|resetstat']);
  const inner = rows.filter((r) => !ignore.has(r.cmd)).sort((a, b) => b.calls - a.calls);
  return {
    scripts: rows.filter(isScript).reduce((a, r) => a + r.calls, 0),
    scriptUs: rows.filter(isScript).reduce((a, r) => a + r.us, 0),
    commands: inner.reduce((a, r) => a + r.calls, 0),
    top: inner.slice(0, 8).map((r) => `${r.cmd} ${r.calls.toFixed(1)}`).join(', '),
  };
}

export function redisBenchmark(port: number): { rps: number; p50Ms: number } {
  const out = execFileSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '-c', '1', '-n', '20000', '-t', 'ping', '-q'], { encoding: 'utf8' });
  const line = out.split(/\r|\n/).filter((l) => l.includes('PING_MBULK')).pop() ?? out;
  const rps = Number(/([\d.]+) requests per second/.exec(line)?.[1] ?? NaN);
  const p50 = Number(/p50=([\d.]+) msec/.exec(line)?.[1] ?? NaN);
  return { rps, p50Ms: Number.isFinite(p50) ? p50 : 1000 / rps };
}

export const cpuLine = (cpu: Record<string, number>): string =>
  Object.entries(cpu).map(([k, us]) => `${k} ${us.toFixed(0)}`).join(', ') + `  (total ${Object.values(cpu).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0).toFixed(0)} µs/item)`;

export function medianCpu(runs: Array<{ cpu: Record<string, number> }>): Record<string, number> {
  const keys = Object.keys(runs[0]?.cpu ?? {});
  return Object.fromEntries(keys.map((k) => [k, median(runs.map((r) => r.cpu[k]!))]));
}
