// The raw BullMQ chains the pipeline benchmarks compare Jupiter with: three queues passing a
// payload on, in one process (RawInProcess) or one process per stage (RawProcesses, the same
// process layout as Jupiter's runners). No records, no exactly-once: the floor BullMQ sets.
import { fork, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { nowMs } from '../../circe/index.js';
import { CpuMeter, redisCalls, stats, type Lat } from './measure.js';
import type { Run } from './jupiter.js';

const here = dirname(fileURLToPath(import.meta.url));

/** The raw chain in this process: three BullMQ workers at concurrency 1 passing the payload on. */
export class RawInProcess {
  private readonly conns: Redis[] = [];
  private readonly queues: Queue[];
  private readonly workers: Worker[];
  private done = 0;
  private target = 0;
  private onDone?: () => void;
  private hops: number[] = [];
  private recordHops = false;
  private readonly meter: CpuMeter;

  constructor(url: string, redisPid: () => number | undefined, private readonly payload: string) {
    const conn = (): Redis => {
      const r = new Redis(url, { maxRetriesPerRequest: null });
      this.conns.push(r);
      return r;
    };
    const names = ['r1', 'r2', 'r3'];
    const opts = { removeOnComplete: true, removeOnFail: 1000 };
    this.queues = names.map((n) => new Queue(n, { connection: conn(), prefix: 'rawbench' }));
    this.workers = names.map((n, i) => new Worker(n, async (job) => {
      const now = nowMs();
      if (this.recordHops && i > 0) this.hops.push(now - (job.data as { t: number }).t);
      if (i < names.length - 1) await this.queues[i + 1]!.add('j', { p: (job.data as { p: string }).p, t: nowMs() }, opts);
      else if (++this.done >= this.target) this.onDone?.();
    }, { connection: conn(), prefix: 'rawbench', concurrency: 1 }));
    this.meter = new CpuMeter(() => new Map([['driver', process.pid], ['redis', redisPid()]]));
  }

  async start(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
    await this.run(20, false);
  }

  private async run(count: number, sequential: boolean): Promise<number> {
    const opts = { removeOnComplete: true, removeOnFail: 1000 };
    this.done = 0;
    this.target = sequential ? 1 : count;
    const t0 = performance.now();
    if (sequential) {
      for (let i = 0; i < count; i++) {
        this.done = 0;
        const p = new Promise<void>((r) => (this.onDone = r));
        await this.queues[0]!.add('j', { p: this.payload, t: Date.now() }, opts);
        await p;
      }
    } else {
      const p = new Promise<void>((r) => (this.onDone = r));
      // Same batching as Jupiter's source (100 items per round trip).
      for (let i = 0; i < count; i += 100) {
        const n = Math.min(100, count - i);
        await this.queues[0]!.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: { p: this.payload, t: Date.now() }, opts })));
      }
      await p;
    }
    return performance.now() - t0;
  }

  async throughput(N: number): Promise<Run> {
    await this.conns[0]!.config('RESETSTAT');
    this.meter.begin();
    const ms = await this.run(N, false);
    const cpu = this.meter.end(N);
    return { throughput: N / (ms / 1000), cpu, redis: await redisCalls(this.conns[0]!, N) };
  }

  async latency(LAT_N: number): Promise<Lat> {
    this.hops = [];
    this.recordHops = true;
    await this.run(LAT_N, true);
    this.recordHops = false;
    return stats(this.hops);
  }

  async stop(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    await Promise.all(this.queues.map((q) => q.close()));
    await Promise.all(this.conns.map((c) => c.quit().catch(() => undefined)));
  }
}

/** The raw chain with each stage in its own process, like Jupiter's runners. */
export class RawProcesses {
  private readonly kids: ChildProcess[];
  private readonly q: Queue;
  private readonly conn: Redis;
  private seen = 0;
  private wake?: () => void;
  private readonly meter: CpuMeter;

  constructor(url: string, redisPid: () => number | undefined, private readonly payload: string) {
    this.kids = [0, 1, 2].map((i) => fork(join(here, 'raw-stage.js'), [url, String(i), '3'], { stdio: 'ignore' }));
    this.conn = new Redis(url, { maxRetriesPerRequest: null });
    this.q = new Queue('r1', { connection: this.conn, prefix: 'rawproc' });
    this.meter = new CpuMeter(() => new Map<string, number | undefined>([...this.kids.map((k, i) => [`r${i + 1}`, k.pid] as const), ['redis', redisPid()], ['driver', process.pid]]));
  }

  async start(): Promise<void> {
    await Promise.all(this.kids.map((k) => new Promise((r) => k.once('message', r))));
    this.kids[2]!.on('message', (n: unknown) => {
      if (typeof n === 'number') this.seen = n;
      this.wake?.();
    });
    await this.run(20);
  }

  private async run(count: number): Promise<number> {
    const target = this.seen + count;
    const t0 = performance.now();
    for (let i = 0; i < count; i += 100) {
      const n = Math.min(100, count - i);
      await this.q.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: { p: this.payload, t: Date.now() }, opts: { removeOnComplete: true } })));
    }
    while (this.seen < target) await new Promise<void>((r) => (this.wake = r));
    return performance.now() - t0;
  }

  async throughput(N: number): Promise<Run> {
    this.meter.begin();
    const ms = await this.run(N);
    return { throughput: N / (ms / 1000), cpu: this.meter.end(N) };
  }

  async stop(): Promise<void> {
    this.kids.forEach((k) => k.kill('SIGTERM'));
    await this.q.close();
    await this.conn.quit().catch(() => undefined);
  }
}

