// npm run bench:peers — the same 3-stage pipeline of no-op tasks and 100-byte items through
// Jupiter (process runtime; Python and JavaScript tasks), Dask distributed and Celery (Debian's
// packages, Python tasks), beside a raw one-process BullMQ chain (JavaScript), and 1 MiB items
// through Jupiter beside a raw Redis SET+GET chain of the same bytes, in one run, rounds
// interleaved. Per system and round:
//   throughput: N items submitted at once (open loop), items/s from first submit to last result
//   end-to-end: items one at a time (closed loop), submit to a blocking client call returning
//     (Jupiter: DoneWaiter's blocking read of item-done events; Dask: future.result(); Celery:
//     AsyncResult.get(), which subscribes to the result) — no polling anywhere
//   per hop: next stage's start - previous stage's end, both stamped inside the task functions
//     (the same stamping code for every Python system: bench/pipeline/noop-task.ts)
//   CPU per item: every process of the system (and Redis, and the client) from /proc
// Peers' settings (their docs' advice for a pipeline): see bench/peers/peers.py and the README.
// Environment: BENCH_ITEMS (5000), BENCH_LATENCY_ITEMS (200), BENCH_ROUNDS (3), BENCH_BIG_ITEMS
// (100, 1 MiB each), BENCH_WARM_ROUNDS (1: unmeasured rounds first), BENCH_ONLY (comma list of:
// jupiter-py, jupiter-js, bullmq, dask, celery, big), BENCH_DATA_PATH (central | direct: Jupiter's data path; default central), BENCH_RESULTS
// (JSON; default bench/results/peers.json, or peers-direct.json on the direct path).
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runnerNodeFlags } from '../../circe/runtime/node-flags.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { treeCpuDelta, treeCpuUs, cpuUs } from '../proc-cpu.js';
import { Ours } from '../pipeline/jupiter.js';
import { log, median, stats, type Lat } from '../pipeline/measure.js';
import { PEER_STAGE_SOURCE } from '../pipeline/noop-task.js';
import { RawInProcess } from '../pipeline/raw-chain.js';
import { RawRedisChain } from './raw-redis.js';

const N = Number(process.env.BENCH_ITEMS ?? 5000);
const LAT_N = Number(process.env.BENCH_LATENCY_ITEMS ?? 200);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
// Unmeasured rounds first, for every system alike: a fresh process is not yet at its steady
// state. Measured on Jupiter's JavaScript pipeline (rounds of 5,000 items after a 20-item
// warm-up): the first round ran 700-950 items/s and the next ones 1,050-1,550, each stage
// spending 450-475 µs of CPU per item against 225-280 later, ~0.5 s of it per process on V8's
// helper threads (optimising compiles, the heap's growth) that later rounds no longer use.
const WARM_ROUNDS = Math.max(0, Number(process.env.BENCH_WARM_ROUNDS ?? 1));
const BIG_N = Number(process.env.BENCH_BIG_ITEMS ?? 100);
const BIG_LAT_N = Math.max(5, Math.round(BIG_N / 5));
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined;
const DATA_PATH = process.env.BENCH_DATA_PATH === 'direct' ? 'direct' : 'central';
const PAYLOAD = Buffer.alloc(100, 'p');
const BIG = Buffer.alloc(1024 * 1024, 'b');
const PYTHON = '/usr/bin/python3';
const here = dirname(fileURLToPath(import.meta.url));
/** bench/peers in the source tree (the Python files are not compiled to dist/). */
const pySources = [here, join(here, '..', '..', '..', 'bench', 'peers')].find((d) => existsSync(join(d, 'peers.py')))!;

/** One measured round of one system. */
interface Round {
  throughput: number;
  /** CPU µs per item of all its processes (and Redis and the client), and per process where known. */
  cpuUs: number;
  cpu?: Record<string, number>;
  e2e: Lat;
  hop: Lat;
}

/** Task stamps (key, start s, end s) written inside the task functions, read and cleared. */
class Stamps {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  /** Per-hop ms of the given keys (stages ordered by start), then every file is emptied. */
  hops(keys: string[]): number[] {
    const want = new Set(keys);
    const recs = new Map<string, Array<[number, number]>>();
    for (const f of readdirSync(this.dir)) {
      const p = join(this.dir, f);
      for (const line of readFileSync(p, 'utf8').split('\n')) {
        const [k, a, b] = line.split(' ');
        if (!k || !want.has(k)) continue;
        const list = recs.get(k) ?? [];
        list.push([Number(a), Number(b)]);
        recs.set(k, list);
      }
      truncateSync(p); // the writers append (O_APPEND), so they go on at the new end
    }
    const out: number[] = [];
    for (const list of recs.values()) {
      list.sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < list.length; i++) out.push((list[i]![0] - list[i - 1]![1]) * 1000);
    }
    return out;
  }

  clear(): void {
    for (const f of readdirSync(this.dir)) truncateSync(join(this.dir, f));
  }
}

/** A peer (Dask or Celery) driven by bench/peers/peers.py under Debian's Python. */
class Peer {
  private child?: ChildProcess;
  private lines?: Interface;
  private readonly replies: Array<(v: Record<string, unknown>) => void> = [];

  constructor(readonly system: 'dask' | 'celery', private readonly redisUrl: string, private readonly stagesDir: string, private readonly redisPid: () => number | undefined) {}

  private call(cmd: Record<string, unknown>): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      this.replies.push((v) => (v.error ? reject(new Error(`${this.system}: ${String(v.error)}`)) : resolve(v)));
      this.child!.stdin!.write(`${JSON.stringify(cmd)}\n`);
    });
  }

  async start(): Promise<void> {
    this.child = spawn(PYTHON, [join(pySources, 'peers.py'), this.system, this.redisUrl, this.stagesDir], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, PYTHONPATH: `${this.stagesDir}:${pySources}`, PYTHONDONTWRITEBYTECODE: '1' },
    });
    this.lines = createInterface({ input: this.child.stdout! });
    this.lines.on('line', (l) => this.replies.shift()?.(JSON.parse(l) as Record<string, unknown>));
    this.child.on('exit', (code) => {
      for (const r of this.replies.splice(0)) r({ error: `driver exited (${code})` });
    });
    await this.call({ op: 'start' });
  }

  async throughput(n: number, tag: string): Promise<{ throughput: number; cpuUs: number }> {
    const before = treeCpuUs(this.child!.pid);
    const redis0 = cpuUs(this.redisPid());
    const { secs } = (await this.call({ op: 'throughput', n, tag })) as { secs: number };
    const used = treeCpuDelta(before, treeCpuUs(this.child!.pid)) + (cpuUs(this.redisPid()) - redis0);
    return { throughput: n / secs, cpuUs: used / n };
  }

  async closedLoop(n: number, tag: string): Promise<{ e2e: number[]; keys: string[] }> {
    const { e2e } = (await this.call({ op: 'latency', n, tag })) as { e2e: number[] };
    return { e2e, keys: e2e.map((_, i) => `${tag}-${i}`) };
  }

  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    const exited = new Promise((r) => this.child!.once('exit', r));
    await Promise.race([this.call({ op: 'stop' }).catch(() => undefined), new Promise((r) => setTimeout(r, 30_000))]);
    const timer = setTimeout(() => this.child?.kill('SIGKILL'), 10_000);
    this.child.stdin!.end();
    await exited;
    clearTimeout(timer);
  }
}

function setUpPeers(): void {
  execFileSync('bash', [join(pySources, 'setup.sh')], { stdio: 'inherit' });
}

const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + (Number.isFinite(b) ? b : 0), 0);
const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : '-');

async function main(): Promise<void> {
  const want = (s: string): boolean => !ONLY || ONLY.has(s);
  if (want('dask') || want('celery')) setUpPeers();
  const root = mkdtempSync(join(tmpdir(), 'jpeers-bench-'));
  const stamps = new Stamps(join(root, 'stamps'));
  process.env.BENCH_STAMPS_DIR = stamps.dir; // inherited by every runner, Python worker and peer
  const stagesDir = join(root, 'stages');
  mkdirSync(stagesDir);
  writeFileSync(join(stagesDir, 'stages.py'), PEER_STAGE_SOURCE);
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redisPid = (): number | undefined => server.pid;
  const systems = new Map<string, {
    label: string;
    start(): Promise<void>;
    round(r: number): Promise<Round>;
    stop(): Promise<void>;
  }>();

  const jupiter = (key: string, label: string, python: boolean, payload: Buffer, n: number, latN: number): void => {
    const ours = new Ours(server.url, root, redisPid, { python, payload, files: (WARM_ROUNDS + ROUNDS) * (n + latN), prefix: `${key}:`, dataPath: DATA_PATH });
    systems.set(key, {
      label,
      start: () => ours.start(),
      async round(): Promise<Round> {
        const t = await ours.throughput(n);
        if (t.redis) log(`  Redis per item: ${t.redis.scripts.toFixed(2)} scripts (${t.redis.scriptUs.toFixed(0)} µs), ${t.redis.commands.toFixed(1)} commands (${t.redis.top})`);
        stamps.clear();
        const { e2e, keys } = await ours.closedLoop(latN);
        return { throughput: t.throughput, cpuUs: sum(t.cpu), cpu: t.cpu, e2e: stats(e2e), hop: stats(stamps.hops(keys)) };
      },
      stop: () => ours.stop(),
    });
  };
  if (want('jupiter-py')) jupiter('jupiter-py', 'Jupiter, Python tasks', true, PAYLOAD, N, LAT_N);
  if (want('jupiter-js')) jupiter('jupiter-js', 'Jupiter, JavaScript tasks', false, PAYLOAD, N, LAT_N);
  if (want('bullmq')) {
    const raw = new RawInProcess(server.url, redisPid, PAYLOAD.toString());
    systems.set('bullmq', {
      label: 'raw BullMQ chain, one process (JS)',
      start: () => raw.start(),
      async round(): Promise<Round> {
        const t = await raw.throughput(N);
        // Its hops: processor start - add time (no task function to stamp; no end-to-end client).
        const hop = await raw.latency(LAT_N);
        return { throughput: t.throughput, cpuUs: sum(t.cpu), cpu: t.cpu, e2e: { p50: NaN, p99: NaN }, hop };
      },
      stop: () => raw.stop(),
    });
  }
  for (const sys of ['dask', 'celery'] as const) {
    if (!want(sys)) continue;
    const peer = new Peer(sys, `${server.url}/1`, stagesDir, redisPid);
    systems.set(sys, {
      label: sys === 'dask' ? 'Dask distributed (Python)' : 'Celery, Redis broker+backend (Python)',
      start: () => peer.start(),
      async round(r: number): Promise<Round> {
        const t = await peer.throughput(N, `${sys}-t${r}`);
        stamps.clear();
        const { e2e, keys } = await peer.closedLoop(LAT_N, `${sys}-l${r}`);
        return { throughput: t.throughput, cpuUs: t.cpuUs, e2e: stats(e2e), hop: stats(stamps.hops(keys)) };
      },
      stop: () => peer.stop(),
    });
  }
  if (want('big')) {
    jupiter('big', 'Jupiter, JavaScript tasks, 1 MiB items', false, BIG, BIG_N, BIG_LAT_N);
    const raw = new RawRedisChain(server.url, BIG);
    systems.set('big-raw', {
      label: 'raw Redis SET+GET chain, 1 MiB items',
      start: async () => undefined,
      async round(): Promise<Round> {
        const t0 = cpuUs(process.pid) + cpuUs(server.pid);
        const throughput = await raw.throughput(BIG_N);
        const used = (cpuUs(process.pid) + cpuUs(server.pid) - t0) / BIG_N;
        const e2e = await raw.closedLoop(BIG_LAT_N);
        return { throughput, cpuUs: used, e2e: stats(e2e), hop: { p50: NaN, p99: NaN } };
      },
      stop: () => raw.stop(),
    });
  }

  const results = new Map<string, Round[]>([...systems.keys()].map((k) => [k, []]));
  /** Summary and targets so far; the JSON is written after every round (a run cut short keeps its rounds). */
  const report = () => {
    const med = (k: string, pick: (x: Round) => number): number => median((results.get(k) ?? []).map(pick));
    // NaN (printed as -) where either system was left out (BENCH_ONLY).
    const ratio = (a: string, b: string, pick: (x: Round) => number): number =>
      median((results.get(a) ?? []).flatMap((x, i) => {
        const y = results.get(b)?.[i];
        return y ? [pick(x) / pick(y)] : [];
      }));
    const summary = Object.fromEntries([...systems].map(([k, s]) => [k, {
      label: s.label,
      itemsPerSec: med(k, (x) => x.throughput),
      e2eP50Ms: med(k, (x) => x.e2e.p50),
      e2eP99Ms: med(k, (x) => x.e2e.p99),
      hopP50Ms: med(k, (x) => x.hop.p50),
      hopP99Ms: med(k, (x) => x.hop.p99),
      cpuMsPerItem: med(k, (x) => x.cpuUs) / 1000,
    }]));
    const tp = (x: Round): number => x.throughput;
    const e2e = (x: Round): number => x.e2e.p50;
    const targets = {
      e2eP50PyOverCelery: ratio('jupiter-py', 'celery', e2e),
      throughputPyOverDask: ratio('jupiter-py', 'dask', tp),
      throughputPyOverCelery: ratio('jupiter-py', 'celery', tp),
      throughputJsOverRawBullmq: ratio('jupiter-js', 'bullmq', tp),
      throughputBigOverRawRedis: ratio('big', 'big-raw', tp),
      cpuMsPerItemPy: summary['jupiter-py']?.cpuMsPerItem ?? NaN,
      cpuMsPerItemJs: summary['jupiter-js']?.cpuMsPerItem ?? NaN,
    };
    const out = process.env.BENCH_RESULTS ?? join(here, '..', '..', '..', 'bench', 'results', DATA_PATH === 'direct' ? 'peers-direct.json' : 'peers.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({
      bench: 'peers', at: new Date().toISOString(), dataPath: DATA_PATH, items: N, latencyItems: LAT_N, bigItems: BIG_N, bigLatencyItems: BIG_LAT_N, rounds: ROUNDS, warmRounds: WARM_ROUNDS,
      payloadBytes: PAYLOAD.length, bigPayloadBytes: BIG.length, cpus: cpus().length, loadavg: loadavg(), node: process.version,
      summary, targets, perRound: Object.fromEntries(results),
    }, null, 2)}\n`);
    return { summary, targets, out };
  };
  try {
    for (const [k, s] of systems) {
      log(`starting ${s.label} ...`);
      await s.start();
      log(`  ${k} ready`);
    }
    const order = [...systems.keys()];
    for (let w = 1; w <= WARM_ROUNDS; w++) {
      for (const [k, s] of systems) {
        const res = await s.round(-w);
        log(`warm-up ${w}/${WARM_ROUNDS} (not counted): ${k} ${f(res.throughput, 0)} items/s, CPU ${f(res.cpuUs / 1000, 3)} ms/item`);
      }
    }
    for (let r = 1; r <= ROUNDS; r++) {
      // Interleaved, and each round starts with a different system.
      const turn = [...order.slice((r - 1) % order.length), ...order.slice(0, (r - 1) % order.length)];
      for (const k of turn) {
        log(`round ${r}/${ROUNDS}: ${systems.get(k)!.label} (load ${loadavg()[0]!.toFixed(1)}) ...`);
        const res = await systems.get(k)!.round(r);
        results.get(k)!.push(res);
        log(`  ${f(res.throughput, 0)} items/s, end-to-end p50 ${f(res.e2e.p50)} ms, hop p50 ${f(res.hop.p50)} ms, CPU ${f(res.cpuUs / 1000, 3)} ms/item`);
      }
      report();
    }
  } finally {
    for (const s of systems.values()) await s.stop().catch((e: Error) => log(`stop: ${e.message}`));
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const { summary, targets, out } = report();
  console.log(`\nbench:peers  (Jupiter on the ${DATA_PATH} data path; 3 stages of no-op tasks; ${N} items of 100 B for throughput, ${LAT_N} one at a time for latency; 1 MiB: ${BIG_N} and ${BIG_LAT_N}; medians of ${ROUNDS} interleaved rounds after ${WARM_ROUNDS} unmeasured; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})\n`);
  console.log('| system | items/s | end-to-end p50 / p99 (ms) | hop p50 / p99 (ms) | CPU per item (ms) |');
  console.log('|---|---|---|---|---|');
  for (const v of Object.values(summary)) {
    console.log(`| ${v.label} | ${f(v.itemsPerSec, 0)} | ${f(v.e2eP50Ms)} / ${f(v.e2eP99Ms)} | ${f(v.hopP50Ms)} / ${f(v.hopP99Ms)} | ${f(v.cpuMsPerItem, 3)} |`);
  }
  const mark = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  console.log(`\n  end-to-end p50 Jupiter (Python) / Celery   ${f(targets.e2eP50PyOverCelery)}  (target <= 1: ${mark(targets.e2eP50PyOverCelery <= 1)})`);
  console.log(`  throughput Jupiter (Python) / Dask         ${f(targets.throughputPyOverDask)}  (target >= 2: ${mark(targets.throughputPyOverDask >= 2)})`);
  console.log(`  throughput Jupiter (Python) / Celery       ${f(targets.throughputPyOverCelery)}  (target >= 4: ${mark(targets.throughputPyOverCelery >= 4)})`);
  console.log(`  throughput Jupiter (JS) / raw BullMQ chain ${f(targets.throughputJsOverRawBullmq)}  (target >= 1: ${mark(targets.throughputJsOverRawBullmq >= 1)})`);
  console.log(`  throughput 1 MiB Jupiter / raw Redis chain ${f(targets.throughputBigOverRawRedis)}  (target >= 0.8: ${mark(targets.throughputBigOverRawRedis >= 0.8)})`);
  console.log(`  CPU per item Jupiter Python ${f(targets.cpuMsPerItemPy, 3)} ms (target <= 0.84: ${mark(targets.cpuMsPerItemPy <= 0.84)}), JS ${f(targets.cpuMsPerItemJs, 3)} ms (target <= 0.46: ${mark(targets.cpuMsPerItemJs <= 0.46)})`);
  log(`results: ${out}`);
}

// The raw chains run in this process, so it gets the heap settings Jupiter's runners start with
// (circe/runtime/node-flags.ts). Without them V8 ran a mark-compact here every few items of the
// raw 1 MiB chain once Jupiter's rounds had grown this process's heap: the baseline swung between
// 62 and 130 items/s (13-23 ms of CPU per item) where with them it runs 242-271 (~6 ms).
const flags = runnerNodeFlags();
if (flags.some((f) => !process.execArgv.includes(f))) {
  const r = spawnSync(process.execPath, [...process.execArgv, ...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
} else {
  main().catch((e: unknown) => {
    console.error(e);
    process.exit(1);
  });
}
