// Resource profiler of one agent: every `intervalMs` it samples machine-wide CPU% (from the
// change in os.cpus() times since the previous sample) and memory% (1 - available/total),
// keeps a running mean over the last `window` samples (DRUPE kept an unbounded mean, which
// stops moving after a few hours), and publishes NodeResources to `res:<node>`.
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import type { NodeResources } from '../../config/types.js';
import { machineId } from '../../circe/runtime/machine.js';
import { cgroupCpuLimit } from './cgroup-cpu.js';

export interface ResourceOptions {
  intervalMs: number;
  /** Samples in the running mean. */
  window: number;
  /** The node's CPU limit declared in the configuration (nodes[].cpus); wins over its cgroup's. */
  cpus?: number;
}

export const defaultResourceOptions = (): ResourceOptions => ({ intervalMs: 2000, window: 60 });

interface CpuTimes {
  idle: number;
  total: number;
}

function cpuTimes(): CpuTimes {
  let idle = 0;
  let total = 0;
  for (const c of cpus()) {
    const t = c.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

const mean = (v: number[]) => v.reduce((s, x) => s + x, 0) / (v.length || 1);
const round2 = (x: number) => Math.round(x * 100) / 100;

export class ResourceProfiler {
  private prev = cpuTimes();
  private readonly cpuHist: number[] = [];
  private readonly memHist: number[] = [];
  private timer?: NodeJS.Timeout;
  private last?: NodeResources;
  /** Declared, else read once from the cgroup (a quota does not change under a running agent). */
  private readonly limit: Pick<NodeResources, 'cpuLimit' | 'cpuLimitFrom'>;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly node: string,
    private readonly opts: ResourceOptions,
    private readonly log: (line: string) => void,
  ) {
    const measured = opts.cpus === undefined ? cgroupCpuLimit() : undefined;
    this.limit = opts.cpus !== undefined ? { cpuLimit: opts.cpus, cpuLimitFrom: 'declared' }
      : measured !== undefined ? { cpuLimit: measured, cpuLimitFrom: 'cgroup' } : {};
  }

  /** Publish a first sample right away (CPU over a short 250 ms window), then every interval. */
  async start(): Promise<void> {
    await new Promise((r) => setTimeout(r, 250));
    await this.tick();
    this.timer = setInterval(() => void this.tick(), this.opts.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  latest(): NodeResources | undefined {
    return this.last;
  }

  sample(): NodeResources {
    const now = cpuTimes();
    const dTotal = now.total - this.prev.total;
    const cpu = dTotal > 0 ? Math.min(100, Math.max(0, 100 * (1 - (now.idle - this.prev.idle) / dTotal))) : (this.cpuHist.at(-1) ?? 0);
    this.prev = now;
    const total = totalmem();
    const free = freemem();
    const mem = total > 0 ? 100 * (1 - free / total) : 0;
    for (const [hist, v] of [[this.cpuHist, cpu], [this.memHist, mem]] as const) {
      hist.push(v);
      if (hist.length > this.opts.window) hist.shift();
    }
    this.last = {
      node: this.node,
      cpuPercent: round2(cpu),
      cpuMean: round2(mean(this.cpuHist)),
      memPercent: round2(mem),
      memMean: round2(mean(this.memHist)),
      cores: cpus().length,
      host: machineId(),
      ...this.limit,
      load1: round2(loadavg()[0] ?? 0),
      freeMemBytes: free,
      updatedAt: Date.now(),
    };
    return this.last;
  }

  private async tick(): Promise<void> {
    const res = this.sample();
    try {
      await this.redis.hset(this.keys.resources(this.node), 'json', JSON.stringify(res));
    } catch (e) {
      this.log(`cannot publish resources: ${(e as Error).message}`);
    }
  }
}
