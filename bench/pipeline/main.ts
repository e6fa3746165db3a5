// npm run bench:pipeline — a 3-stage linear pipeline of no-op JavaScript tasks through the
// process runtime, beside a raw BullMQ chain of 3 queues with the same payloads and
// redis-benchmark's round trip, all on the same private Redis, in the same run.
//   throughput: N items submitted at once (open loop), items/s from first submit to last done
//   per-hop latency: items sent one at a time (closed loop), next stage's start - previous
//   stage's finish (ours: from the runtime records; raw: processor start - add time)
// The machine is shared, so every variant runs BENCH_ROUNDS times, interleaved, and the report
// gives medians; the ratio is the median of the per-round ratios (raw and ours measured side by
// side). CPU per item is read from /proc for each process (and from Redis' INFO), which shows
// where the time goes independently of how busy the machine is.
// Environment: BENCH_ITEMS (10000), BENCH_LATENCY_ITEMS (300), BENCH_ROUNDS (3),
// BENCH_CONCURRENCY (runner concurrency; default: the pipeline default), BENCH_ONLY=ours,
// BENCH_TASK=python (the no-op tasks in Python, through the persistent Python worker),
// BENCH_PROFILE=<dir> (CPU profiles of the runners), BENCH_RESULTS=<file> (JSON, default
// bench/results/pipeline.json).
import { NOOP_PYTHON_SOURCE, NOOP_TASK_SOURCE } from './noop-task.js';
import { cpuUs } from '../proc-cpu.js';
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import {
  appKeys, configureApp, connectRedis, itemResults, nowMs, percentile, ProcessRuntime, submitItems, teardownAppKeys,
} from '../../circe/index.js';

const N = Number(process.env.BENCH_ITEMS ?? 10_000);
const LAT_N = Number(process.env.BENCH_LATENCY_ITEMS ?? 300);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const ONLY_OURS = process.env.BENCH_ONLY === 'ours';
const PYTHON = process.env.BENCH_TASK === 'python';
const PAYLOAD = Buffer.alloc(100, 'p');
const PREFIX = 'bench:';
const here = dirname(fileURLToPath(import.meta.url));
const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};

interface Lat {
  p50: number;
  p99: number;
}
const stats = (xs: number[]): Lat => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50) ?? NaN, p99: percentile(s, 99) ?? NaN };
};
const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The persistent Python workers below a process (its descendants; Linux /proc, none elsewhere). */
function pythonWorkers(pid: number): number[] {
  let kids: number[];
  try {
    kids = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
  const isWorker = (k: number): boolean => {
    try {
      return readFileSync(`/proc/${k}/cmdline`, 'utf8').includes('py_worker.py');
    } catch {
      return false;
    }
  };
  return kids.flatMap((k) => (isWorker(k) ? [k] : pythonWorkers(k)));
}

/** CPU per item (µs) of named processes over one measured run. */
class CpuMeter {
  private start = new Map<string, number>();
  constructor(private readonly pids: () => Map<string, number | undefined>) {}
  begin(): void {
    this.start = new Map([...this.pids()].map(([k, pid]) => [k, k === 'driver' ? this.self() : cpuUs(pid)]));
  }
  private self(): number {
    const u = process.cpuUsage();
    return u.user + u.system;
  }
  end(items: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [k, pid] of this.pids()) out[k] = ((k === 'driver' ? this.self() : cpuUs(pid)) - (this.start.get(k) ?? NaN)) / items;
    return out;
  }
}

/** Redis commands per item since the last RESETSTAT (commands inside scripts count too). */
async function redisCalls(redis: Redis, items: number): Promise<{ scripts: number; scriptUs: number; commands: number; top: string }> {
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

function makeApp(root: string): string {
  const dir = join(root, PYTHON ? 'noop3py' : 'noop3');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '3\ns1 1 true s2\ns2 1 true s3\ns3 1 true home\n');
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: { s1: ['noop', true], s2: ['noop', true], s3: ['noop', true] },
    exec_profiler: { s1: true, s2: true, s3: true },
  }));
  if (PYTHON) writeFileSync(join(dir, 'scripts', 'noop.py'), NOOP_PYTHON_SOURCE);
  else writeFileSync(join(dir, 'scripts', 'noop.mjs'), NOOP_TASK_SOURCE);
  writeFileSync(join(dir, 'sample_input', '1.bin'), PAYLOAD);
  return dir;
}

interface Run {
  throughput: number;
  cpu: Record<string, number>;
  redis?: { scripts: number; scriptUs: number; commands: number; top: string };
}

/** Jupiter: the app deployed once with the process runtime; each round streams N new items. */
class Ours {
  private readonly redis: Redis;
  private readonly runtime: ProcessRuntime;
  private readonly cluster: ClusterConfig;
  private app!: AppSpec;
  private files: string[] = [];
  private next = 0;
  private pids = new Map<string, number | undefined>();
  private meter!: CpuMeter;
  concurrency = NaN;

  constructor(private readonly url: string, private readonly root: string, private readonly redisPid: () => number | undefined) {
    this.redis = connectRedis(url);
    this.cluster = { stateDir: join(root, '.jupiter') } as ClusterConfig;
    this.runtime = new ProcessRuntime({ runsDir: join(root, 'runs') });
  }

  async start(): Promise<void> {
    this.app = await loadApp(makeApp(this.root));
    const c = process.env.BENCH_CONCURRENCY;
    const s = await configureApp(this.redis, PREFIX, this.app.name, c ? { concurrency: Number(c) } : {});
    this.concurrency = s.concurrency;
    const specs = ['s1', 's2', 's3', 'home'].map((task) => ({ app: this.app.name, task, node: 'local', runId: 'bench', redisUrl: this.url, redisPrefix: PREFIX }));
    await this.runtime.prepare(this.app, this.cluster);
    if (process.env.BENCH_PROFILE) process.env.JUPITER_RUNNER_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${resolve(process.env.BENCH_PROFILE)}`;
    const handles = await this.runtime.start(this.app, specs, this.cluster);
    this.pids = new Map([...handles.map((h) => [h.task === 'home' ? 'sink' : h.task, Number(h.id)] as const), ['redis', this.redisPid()], ['driver', process.pid]]);
    this.meter = new CpuMeter(() => this.pids);
    const inDir = join(this.root, 'in');
    mkdirSync(inDir);
    this.files = Array.from({ length: 20 + ROUNDS * (N + LAT_N) }, (_, i) => {
      const p = join(inDir, `${i}.bin`);
      writeFileSync(p, PAYLOAD);
      return p;
    });
    await this.stream(20, 60_000); // warm-up
    // A Python task's interpreter runs below its runner (started by now): a CPU column of its own.
    for (const h of handles) for (const pid of pythonWorkers(Number(h.id))) this.pids.set(`${h.task}.py`, pid);
  }

  private take(n: number): string[] {
    this.next += n;
    return this.files.slice(this.next - n, this.next);
  }

  /**
   * Submit n items and wait until the pipeline has finished them all. Waiting polls the
   * finished-items counter (one HGET), not every item's record, so that the poller adds no
   * load; every item's outcome is checked once afterwards.
   */
  private async stream(n: number, timeoutMs: number): Promise<string[]> {
    const k = appKeys(PREFIX, this.app.name);
    const before = Number((await this.redis.hget(k.stats, 'items:done')) ?? 0);
    const items = await submitItems(this.redis, PREFIX, this.app, this.take(n));
    const deadline = Date.now() + timeoutMs;
    while (Number((await this.redis.hget(k.stats, 'items:done')) ?? 0) < before + n) {
      if (Date.now() > deadline) throw new Error(`ours: items did not finish within ${timeoutMs} ms`);
      await sleep(n === 1 ? 0 : 20);
    }
    return items.map((i) => i.item);
  }

  async throughput(): Promise<Run> {
    await this.redis.config('RESETSTAT');
    this.meter.begin();
    const t0 = performance.now();
    const items = await this.stream(N, 600_000);
    const throughput = N / ((performance.now() - t0) / 1000);
    const cpu = this.meter.end(N);
    const redis = await redisCalls(this.redis, N);
    // Anything but zero here means the run did extra work (retries or redelivered copies).
    const st = await this.redis.hgetall(appKeys(PREFIX, this.app.name).stats);
    const extra = Object.entries(st).filter(([f, v]) => /^(retried|dup|failed)/.test(f) && Number(v) > 0);
    if (extra.length) log(`  Jupiter extra work so far: ${extra.map(([f, v]) => `${f} ${v}`).join(', ')}`);
    const res = await itemResults(this.redis, PREFIX, this.app.name, items);
    const bad = res.filter((r) => !r.done || r.failed || r.outputs.length !== 1);
    if (bad.length) throw new Error(`ours: ${bad.length} item(s) not delivered exactly once, e.g. ${JSON.stringify(bad[0])}`);
    return { throughput, cpu, redis };
  }

  async latency(): Promise<Lat> {
    const hops: number[] = [];
    const k = appKeys(PREFIX, this.app.name);
    for (let i = 0; i < LAT_N; i++) {
      const [item] = await this.stream(1, 30_000);
      const rt = await this.redis.hgetall(k.rt(item!));
      for (const [a, b] of [['s1', 's2'], ['s2', 's3']]) hops.push(Number(rt[`${b}|start`]) - Number(rt[`${a}|finish`]));
    }
    return stats(hops);
  }

  async stop(): Promise<void> {
    await this.runtime.teardown(this.app.name, this.cluster).catch(() => undefined);
    await teardownAppKeys(this.redis, PREFIX, this.app.name).catch(() => undefined);
    await this.redis.quit();
  }
}

/** The raw chain in this process: three BullMQ workers at concurrency 1 passing the payload on. */
class RawInProcess {
  private readonly conns: Redis[] = [];
  private readonly queues: Queue[];
  private readonly workers: Worker[];
  private done = 0;
  private target = 0;
  private onDone?: () => void;
  private hops: number[] = [];
  private recordHops = false;
  private readonly meter: CpuMeter;

  constructor(url: string, redisPid: () => number | undefined) {
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
        await this.queues[0]!.add('j', { p: PAYLOAD.toString(), t: Date.now() }, opts);
        await p;
      }
    } else {
      const p = new Promise<void>((r) => (this.onDone = r));
      // Same batching as Jupiter's source (100 items per round trip).
      for (let i = 0; i < count; i += 100) {
        const n = Math.min(100, count - i);
        await this.queues[0]!.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: { p: PAYLOAD.toString(), t: Date.now() }, opts })));
      }
      await p;
    }
    return performance.now() - t0;
  }

  async throughput(): Promise<Run> {
    await this.conns[0]!.config('RESETSTAT');
    this.meter.begin();
    const ms = await this.run(N, false);
    const cpu = this.meter.end(N);
    return { throughput: N / (ms / 1000), cpu, redis: await redisCalls(this.conns[0]!, N) };
  }

  async latency(): Promise<Lat> {
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
class RawProcesses {
  private readonly kids: ChildProcess[];
  private readonly q: Queue;
  private readonly conn: Redis;
  private seen = 0;
  private wake?: () => void;
  private readonly meter: CpuMeter;

  constructor(url: string, redisPid: () => number | undefined) {
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
      await this.q.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: { p: PAYLOAD.toString(), t: Date.now() }, opts: { removeOnComplete: true } })));
    }
    while (this.seen < target) await new Promise<void>((r) => (this.wake = r));
    return performance.now() - t0;
  }

  async throughput(): Promise<Run> {
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

function redisBenchmark(port: number): { rps: number; p50Ms: number } {
  const out = execFileSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '-c', '1', '-n', '20000', '-t', 'ping', '-q'], { encoding: 'utf8' });
  const line = out.split(/\r|\n/).filter((l) => l.includes('PING_MBULK')).pop() ?? out;
  const rps = Number(/([\d.]+) requests per second/.exec(line)?.[1] ?? NaN);
  const p50 = Number(/p50=([\d.]+) msec/.exec(line)?.[1] ?? NaN);
  return { rps, p50Ms: Number.isFinite(p50) ? p50 : 1000 / rps };
}

const cpuLine = (cpu: Record<string, number>): string =>
  Object.entries(cpu).map(([k, us]) => `${k} ${us.toFixed(0)}`).join(', ') + `  (total ${Object.values(cpu).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0).toFixed(0)} µs/item)`;

function medianCpu(runs: Run[]): Record<string, number> {
  const keys = Object.keys(runs[0]?.cpu ?? {});
  return Object.fromEntries(keys.map((k) => [k, median(runs.map((r) => r.cpu[k]!))]));
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'jupiter-bench-'));
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redisPid = (): number | undefined => server.pid;
  const raw = ONLY_OURS ? undefined : new RawInProcess(server.url, redisPid);
  const rawProc = ONLY_OURS ? undefined : new RawProcesses(server.url, redisPid);
  const ours = new Ours(server.url, root, redisPid);
  const rounds: Array<{ raw?: Run; rawProc?: Run; ours: Run; ratio: number; ratioProc: number }> = [];
  try {
    const rb = redisBenchmark(server.port);
    await raw?.start();
    await rawProc?.start();
    await ours.start();
    for (let r = 1; r <= ROUNDS; r++) {
      log(`round ${r}/${ROUNDS}: raw BullMQ in one process, raw BullMQ one process per stage, Jupiter (${N} items each) ...`);
      const a = await raw?.throughput();
      const b = await rawProc?.throughput();
      const c = await ours.throughput();
      rounds.push({ raw: a, rawProc: b, ours: c, ratio: c.throughput / (a?.throughput ?? NaN), ratioProc: c.throughput / (b?.throughput ?? NaN) });
      log(`  raw ${a?.throughput.toFixed(0) ?? '-'}/s, raw per process ${b?.throughput.toFixed(0) ?? '-'}/s, Jupiter ${c.throughput.toFixed(0)}/s (load ${loadavg()[0]!.toFixed(1)})`);
      log(`  Jupiter CPU µs/item: ${cpuLine(c.cpu)}; Redis per item: ${c.redis!.scripts.toFixed(1)} scripts (${c.redis!.scriptUs.toFixed(0)} µs), ${c.redis!.commands.toFixed(0)} commands (${c.redis!.top})`);
    }
    log(`latency: ${LAT_N} items one at a time ...`);
    const rawLat = (await raw?.latency()) ?? { p50: NaN, p99: NaN };
    const ourLat = await ours.latency();

    const tp = (k: 'raw' | 'rawProc' | 'ours'): number => median(rounds.map((x) => x[k]?.throughput ?? NaN));
    const ratio = median(rounds.map((x) => x.ratio));
    const ratioProc = median(rounds.map((x) => x.ratioProc));
    const f = (x: number, d = 2): string => x.toFixed(d);
    const ourRuns = rounds.map((x) => x.ours);
    console.log(`\nbench:pipeline  (${N} items, 100-byte payload, 3 stages, one Redis on loopback; medians of ${ROUNDS} rounds; runner concurrency ${ours.concurrency}; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})`);
    console.log(`  redis-benchmark PING, 1 client   ${f(rb.rps, 0)} req/s, round trip p50 ${f(rb.p50Ms, 3)} ms`);
    console.log(`  raw BullMQ chain                 ${f(tp('raw'), 0)} items/s, hop p50 ${f(rawLat.p50)} ms, p99 ${f(rawLat.p99)} ms (in-process)`);
    console.log(`  raw BullMQ, process per stage    ${f(tp('rawProc'), 0)} items/s`);
    console.log(`  ${`Jupiter (process runtime${PYTHON ? ', Python' : ''})`.padEnd(32)} ${f(tp('ours'), 0)} items/s, hop p50 ${f(ourLat.p50)} ms, p99 ${f(ourLat.p99)} ms`);
    console.log(`  throughput ratio Jupiter/raw     ${f(ratio)}  (per round: ${rounds.map((x) => f(x.ratio)).join(', ')}; target >= 0.50: ${ratio >= 0.5 ? 'met' : 'NOT met'})`);
    console.log(`  ratio Jupiter/raw process-per-stage ${f(ratioProc)}`);
    console.log(`  hop p50 Jupiter/raw              ${f(ourLat.p50 / rawLat.p50)}x;  = ${f(ourLat.p50 / rb.p50Ms, 0)} Redis round trips  (target p50 < 2 ms: ${ourLat.p50 < 2 ? 'met' : 'NOT met'})`);
    console.log(`  CPU µs per item, Jupiter         ${cpuLine(medianCpu(ourRuns))}`);
    if (raw) console.log(`  CPU µs per item, raw in-process  ${cpuLine(medianCpu(rounds.map((x) => x.raw!)))}`);
    if (rawProc) console.log(`  CPU µs per item, raw per process ${cpuLine(medianCpu(rounds.map((x) => x.rawProc!)))}`);
    const rs = ourRuns[ourRuns.length - 1]!.redis!;
    const rr = rounds[rounds.length - 1]?.raw?.redis;
    console.log(`  Redis per item, Jupiter          ${f(rs.scripts, 1)} scripts taking ${f(rs.scriptUs, 0)} µs, ${f(rs.commands, 0)} commands` + (rr ? `; raw: ${f(rr.scripts, 1)} scripts taking ${f(rr.scriptUs, 0)} µs, ${f(rr.commands, 0)} commands` : ''));
    const out = process.env.BENCH_RESULTS ?? join(here, '..', '..', '..', 'bench', 'results', PYTHON ? 'pipeline-python.json' : 'pipeline.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({
      bench: 'pipeline', task: PYTHON ? 'python' : 'javascript', at: new Date().toISOString(), items: N, latencyItems: LAT_N, rounds: ROUNDS, payloadBytes: PAYLOAD.length,
      concurrency: ours.concurrency, cpus: cpus().length, loadavg: loadavg(), node: process.version,
      redisBenchmark: rb,
      median: { rawItemsPerSec: tp('raw'), rawProcessItemsPerSec: tp('rawProc'), oursItemsPerSec: tp('ours'), ratio, ratioProcess: ratioProc },
      hop: { raw: rawLat, ours: ourLat },
      cpuUsPerItem: { ours: medianCpu(ourRuns), raw: raw ? medianCpu(rounds.map((x) => x.raw!)) : null, rawProcess: rawProc ? medianCpu(rounds.map((x) => x.rawProc!)) : null },
      perRound: rounds,
    }, null, 2)}\n`);
    log(`results: ${out}`);
  } finally {
    await raw?.stop().catch(() => undefined);
    await rawProc?.stop().catch(() => undefined);
    await ours.stop().catch(() => undefined);
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
