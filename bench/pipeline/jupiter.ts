// Jupiter as the pipeline benchmarks run it: a 3-stage linear app of no-op tasks deployed once
// with the process runtime on a private Redis; each measured run streams new items through it.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import {
  appKeys, configureApp, connectRedis, DoneWaiter, itemResults, nowMs, ProcessRuntime, submitItems, teardownAppKeys,
} from '../../circe/index.js';
import { NOOP_PYTHON_SOURCE, NOOP_TASK_SOURCE } from './noop-task.js';
import { CpuMeter, log, redisCalls, sleep, stats, type Lat } from './measure.js';
import { descendants } from '../proc-cpu.js';

export interface Run {
  throughput: number;
  cpu: Record<string, number>;
  redis?: { scripts: number; scriptUs: number; commands: number; top: string };
}

export interface OursOptions {
  /** Python tasks (through the persistent Python worker) instead of JavaScript. */
  python: boolean;
  payload: Buffer;
  /** Input files made up front (warm-up and every measured item). */
  files: number;
  /** Redis key prefix (one per deployment on a shared Redis). */
  prefix: string;
  /** Runner concurrency (default: the pipeline default). */
  concurrency?: number;
  /** Where output bytes travel (default: the pipeline default, central). */
  dataPath?: 'central' | 'direct';
}

function makeApp(root: string, name: string, python: boolean, payload: Buffer): string {
  const dir = join(root, name);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '3\ns1 1 true s2\ns2 1 true s3\ns3 1 true home\n');
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: { s1: ['noop', true], s2: ['noop', true], s3: ['noop', true] },
    exec_profiler: { s1: true, s2: true, s3: true },
  }));
  if (python) writeFileSync(join(dir, 'scripts', 'noop.py'), NOOP_PYTHON_SOURCE);
  else writeFileSync(join(dir, 'scripts', 'noop.mjs'), NOOP_TASK_SOURCE);
  writeFileSync(join(dir, 'sample_input', '1.bin'), payload);
  return dir;
}

/** Jupiter: the app deployed once with the process runtime; each run streams new items. */
export class Ours {
  private readonly redis: Redis;
  private readonly runtime: ProcessRuntime;
  private readonly cluster: ClusterConfig;
  private app!: AppSpec;
  private files: string[] = [];
  private next = 0;
  private pids = new Map<string, number | number[] | undefined>();
  private meter!: CpuMeter;
  private waiter?: DoneWaiter;
  concurrency = NaN;

  constructor(private readonly url: string, private readonly root: string, private readonly redisPid: () => number | undefined, private readonly opts: OursOptions) {
    this.redis = connectRedis(url);
    // The prefix too: teardown removes the nodes' data stores by it (a store left behind in
    // /dev/shm would start the next run full).
    this.cluster = { stateDir: join(root, '.jupiter'), redisPrefix: opts.prefix } as ClusterConfig;
    this.runtime = new ProcessRuntime({ runsDir: join(root, 'runs') });
  }

  private get prefix(): string {
    return this.opts.prefix;
  }

  /** pids of the runners (s1, s2, s3, sink) and their Python workers (s1.py, ...). */
  get processes(): Map<string, number | number[] | undefined> {
    return this.pids;
  }

  async start(): Promise<void> {
    const { python, payload } = this.opts;
    const name = `noop3${python ? 'py' : ''}${payload.length > 100 ? `-${payload.length}` : ''}`;
    this.app = await loadApp(makeApp(this.root, name, python, payload));
    const s = await configureApp(this.redis, this.prefix, this.app.name, {
      ...(this.opts.concurrency ? { concurrency: this.opts.concurrency } : {}),
      ...(this.opts.dataPath ? { dataPath: this.opts.dataPath } : {}),
    });
    this.concurrency = s.concurrency;
    const specs = ['s1', 's2', 's3', 'home'].map((task) => ({ app: this.app.name, task, node: 'local', runId: 'bench', redisUrl: this.url, redisPrefix: this.prefix }));
    await this.runtime.prepare(this.app, this.cluster);
    if (process.env.BENCH_PROFILE) process.env.JUPITER_RUNNER_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${resolve(process.env.BENCH_PROFILE)}`;
    const handles = await this.runtime.start(this.app, specs, this.cluster);
    // Python tasks share one runner process (a node host): each process is counted once, under
    // the names of the tasks it runs.
    const byPid = new Map<number, string[]>();
    for (const h of handles) byPid.set(Number(h.id), [...(byPid.get(Number(h.id)) ?? []), h.task === 'home' ? 'sink' : h.task]);
    this.pids = new Map<string, number | number[] | undefined>([...[...byPid].map(([pid, names]) => [names.join('+'), pid] as const), ['redis', this.redisPid()], ['driver', process.pid]]);
    this.meter = new CpuMeter(() => this.pids);
    const inDir = join(this.root, `${name}-in`);
    mkdirSync(inDir);
    this.files = Array.from({ length: 20 + this.opts.files }, (_, i) => {
      const p = join(inDir, `${name}-${i}.bin`);
      writeFileSync(p, payload);
      return p;
    });
    await this.stream(20, 60_000); // warm-up
    // Python tasks' interpreters (a fork server and the workers it forked) run below their runner
    // (started by now): a CPU column of their own.
    for (const [pid, names] of byPid) {
      const py = descendants(pid);
      if (py.length > 0) this.pids.set(`${names.join('+')}.py`, py);
    }
  }

  private take(n: number): string[] {
    if (this.next + n > this.files.length) throw new Error(`bench: only ${this.files.length} input files were made`);
    this.next += n;
    return this.files.slice(this.next - n, this.next);
  }

  /**
   * Submit n items and wait until the pipeline has finished them all. Waiting polls the
   * finished-items counter (one HGET), not every item's record, so that the poller adds no
   * load; every item's outcome is checked once afterwards.
   */
  private async stream(n: number, timeoutMs: number): Promise<string[]> {
    const k = appKeys(this.prefix, this.app.name);
    const before = Number((await this.redis.hget(k.stats, 'items:done')) ?? 0);
    const items = await submitItems(this.redis, this.prefix, this.app, this.take(n));
    const deadline = Date.now() + timeoutMs;
    while (Number((await this.redis.hget(k.stats, 'items:done')) ?? 0) < before + n) {
      if (Date.now() > deadline) throw new Error(`ours: items did not finish within ${timeoutMs} ms`);
      await sleep(n === 1 ? 0 : 20);
    }
    return items.map((i) => i.item);
  }

  async throughput(n: number): Promise<Run> {
    await this.redis.config('RESETSTAT');
    this.meter.begin();
    const t0 = performance.now();
    const items = await this.stream(n, 600_000);
    const throughput = n / ((performance.now() - t0) / 1000);
    const cpu = this.meter.end(n);
    const redis = await redisCalls(this.redis, n);
    // Anything but zero here means the run did extra work (retries or redelivered copies).
    const st = await this.redis.hgetall(appKeys(this.prefix, this.app.name).stats);
    const extra = Object.entries(st).filter(([f, v]) => /^(retried|dup|failed)/.test(f) && Number(v) > 0);
    if (extra.length) log(`  Jupiter extra work so far: ${extra.map(([f, v]) => `${f} ${v}`).join(', ')}`);
    const res = await itemResults(this.redis, this.prefix, this.app.name, items);
    const bad = res.filter((r) => !r.done || r.failed || r.outputs.length !== 1);
    if (bad.length) throw new Error(`ours: ${bad.length} item(s) not delivered exactly once, e.g. ${JSON.stringify(bad[0])}`);
    return { throughput, cpu, redis };
  }

  /**
   * Closed loop, the way a user's client would wait: submit one item, then a blocking wait for
   * its item-done event (DoneWaiter, no polling). Returns each item's end-to-end ms (submit to
   * the client knowing it is done) and its input file name (the key of its task stamps).
   */
  async closedLoop(n: number): Promise<{ e2e: number[]; keys: string[]; items: Array<{ item: string; t0: number; submitted: number; end: number }> }> {
    this.waiter ??= new DoneWaiter(this.redis, this.prefix, this.app.name);
    await this.waiter.ready();
    const e2e: number[] = [];
    const keys: string[] = [];
    const items: Array<{ item: string; t0: number; submitted: number; end: number }> = [];
    for (let i = 0; i < n; i++) {
      const [file] = this.take(1);
      const t0 = nowMs();
      const [item] = await submitItems(this.redis, this.prefix, this.app, [file!]);
      const submitted = nowMs();
      const [r] = await this.waiter.wait([item!], { timeoutMs: 30_000 });
      const end = nowMs();
      e2e.push(end - t0);
      items.push({ item: item!.item, t0, submitted, end });
      if (!r?.done || r.failed || r.outputs.length !== 1) throw new Error(`ours: item ${item!.item} not delivered exactly once: ${JSON.stringify(r)}`);
      keys.push(item!.name);
    }
    return { e2e, keys, items };
  }

  /**
   * CPU each process spent per item (ms) and Redis calls per item while `run` streams `items`
   * (bench:peers' breakdown: an isolated item's CPU, every process counted).
   */
  async cpuDuring<T>(items: number, run: () => Promise<T>): Promise<{ result: T; cpuMs: Record<string, number>; redis: Awaited<ReturnType<typeof redisCalls>> }> {
    await this.redis.config('RESETSTAT');
    this.meter.begin();
    const result = await run();
    const us = this.meter.end(items);
    const redis = await redisCalls(this.redis, items);
    return { result, cpuMs: Object.fromEntries(Object.entries(us).map(([k, v]) => [k, v / 1000])), redis };
  }

  /** Each item's record and runtime record (bench:peers' breakdown of an isolated item's time). */
  async records(items: string[]): Promise<Array<{ item: Record<string, string>; rt: Record<string, string> }>> {
    const k = appKeys(this.prefix, this.app.name);
    const pipe = this.redis.pipeline();
    for (const id of items) pipe.hgetall(k.item(id)).hgetall(k.rt(id));
    const res = (await pipe.exec()) ?? [];
    return items.map((_, i) => ({ item: res[2 * i]![1] as Record<string, string>, rt: res[2 * i + 1]![1] as Record<string, string> }));
  }

  /** Per-hop latency from the runtime records (next stage's start - previous stage's finish). */
  async latency(n: number): Promise<Lat> {
    const hops: number[] = [];
    const k = appKeys(this.prefix, this.app.name);
    for (let i = 0; i < n; i++) {
      const [item] = await this.stream(1, 30_000);
      const rt = await this.redis.hgetall(k.rt(item!));
      for (const [a, b] of [['s1', 's2'], ['s2', 's3']]) hops.push(Number(rt[`${b}|start`]) - Number(rt[`${a}|finish`]));
    }
    return stats(hops);
  }

  async stop(): Promise<void> {
    this.waiter?.close();
    await this.runtime.teardown(this.app.name, this.cluster).catch(() => undefined);
    await teardownAppKeys(this.redis, this.prefix, this.app.name).catch(() => undefined);
    await this.redis.quit();
  }
}
