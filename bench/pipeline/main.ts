// npm run bench:pipeline — a 3-stage linear pipeline of no-op JavaScript tasks through the
// process runtime, beside a raw BullMQ chain of 3 queues with the same payloads and
// redis-benchmark's round trip, all on the same private Redis, in the same run.
//   throughput: N items submitted at once (open loop), items/s from first submit to last done
//   per-hop latency: items sent one at a time (closed loop), next stage's start - previous
//   stage's finish (ours: from the runtime records; raw: processor start - add time)
import { execFileSync, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { loadApp } from '../../config/app/load.js';
import type { ClusterConfig } from '../../config/types.js';
import {
  appKeys, configureApp, connectRedis, nowMs, percentile, ProcessRuntime, submitItems, teardownAppKeys, waitForItems,
} from '../../circe/index.js';

const N = Number(process.env.BENCH_ITEMS ?? 10_000);
const LAT_N = Number(process.env.BENCH_LATENCY_ITEMS ?? 300);
const PAYLOAD = Buffer.alloc(100, 'p');
const PREFIX = 'bench:';
const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};
const stats = (xs: number[]): { p50: number; p99: number } => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50) ?? NaN, p99: percentile(s, 99) ?? NaN };
};

/** Redis main-thread time and command calls per item since the last RESETSTAT (scripts include their inner commands). */
async function redisCost(redis: Redis, items: number): Promise<{ usPerItem: number; callsPerItem: number; top: string }> {
  const cs = await redis.info('commandstats');
  const rows = [...cs.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/g)].map((m) => ({ cmd: m[1]!, calls: Number(m[2]) / items, us: Number(m[3]) / items }));
  const top = rows.filter((r) => r.cmd === 'evalsha' || r.cmd === 'eval').concat(rows.filter((r) => r.cmd !== 'evalsha' && r.cmd !== 'eval').sort((a, b) => b.us - a.us).slice(0, 6));
  const inner = new Set(['evalsha', 'eval', 'info', 'config|resetstat']);
  // Commands run inside scripts are counted both in the script's time and on their own line.
  return {
    usPerItem: rows.filter((r) => r.cmd === 'evalsha' || r.cmd === 'eval').reduce((a, r) => a + r.us, 0),
    callsPerItem: rows.filter((r) => !inner.has(r.cmd)).reduce((a, r) => a + r.calls, 0),
    top: top.map((r) => `${r.cmd} ${r.calls.toFixed(1)}x ${r.us.toFixed(0)}µs`).join(', '),
  };
}

function makeApp(root: string): string {
  const dir = join(root, 'noop3');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '3\ns1 1 true s2\ns2 1 true s3\ns3 1 true home\n');
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: { s1: ['noop', true], s2: ['noop', true], s3: ['noop', true] },
    exec_profiler: { s1: true, s2: true, s3: true },
  }));
  // No-op: hand the input on unchanged (a rename, no copy).
  writeFileSync(join(dir, 'scripts', 'noop.mjs'), [
    "import { renameSync } from 'node:fs';",
    "import { join } from 'node:path';",
    'export function task(inputs, pathin, pathout) {',
    '  const out = join(pathout, inputs[0]);',
    '  renameSync(join(pathin, inputs[0]), out);',
    '  return [out];',
    '}',
    '',
  ].join('\n'));
  writeFileSync(join(dir, 'sample_input', '1.bin'), PAYLOAD);
  return dir;
}

async function benchOurs(url: string, root: string): Promise<{ throughput: number; hop: { p50: number; p99: number } }> {
  const app = await loadApp(makeApp(root));
  const redis = connectRedis(url);
  const cluster = { stateDir: join(root, '.jupiter') } as ClusterConfig;
  const runtime = new ProcessRuntime({ runsDir: join(root, 'runs') });
  try {
    await configureApp(redis, PREFIX, app.name, { concurrency: Number(process.env.BENCH_CONCURRENCY ?? 1) });
    const specs = ['s1', 's2', 's3', 'home'].map((task) => ({ app: app.name, task, node: 'local', runId: 'bench', redisUrl: url, redisPrefix: PREFIX }));
    await runtime.prepare(app, cluster);
    if (process.env.BENCH_PROFILE) process.env.JUPITER_RUNNER_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE}`;
    await runtime.start(app, specs, cluster);
    const inDir = join(root, 'in');
    mkdirSync(inDir);
    const files = Array.from({ length: N + LAT_N + 20 }, (_, i) => {
      const p = join(inDir, `${i}.bin`);
      writeFileSync(p, PAYLOAD);
      return p;
    });
    // warm-up
    const warm = await submitItems(redis, PREFIX, app, files.slice(0, 20));
    await waitForItems(redis, PREFIX, app.name, warm.map((i) => i.item));

    log(`ours: ${N} items through 3 runner processes ...`);
    await redis.config('RESETSTAT');
    const t0 = performance.now();
    const items = await submitItems(redis, PREFIX, app, files.slice(20, 20 + N));
    await waitForItems(redis, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 300_000, pollMs: 50 });
    const throughput = N / ((performance.now() - t0) / 1000);
    log(`ours: Redis per item: ${(await redisCost(redis, N)).top}`);

    log(`ours: ${LAT_N} items one at a time for latency ...`);
    const hops: number[] = [];
    const k = appKeys(PREFIX, app.name);
    for (const f of files.slice(20 + N)) {
      const [it] = await submitItems(redis, PREFIX, app, [f]);
      await waitForItems(redis, PREFIX, app.name, [it!.item], { pollMs: 1 });
      const rt = await redis.hgetall(k.rt(it!.item));
      for (const [a, b] of [['s1', 's2'], ['s2', 's3']]) hops.push(Number(rt[`${b}|start`]) - Number(rt[`${a}|finish`]));
    }
    return { throughput, hop: stats(hops) };
  } finally {
    await runtime.teardown(app.name, cluster);
    await teardownAppKeys(redis, PREFIX, app.name);
    await redis.quit();
  }
}

async function benchRaw(url: string): Promise<{ throughput: number; hop: { p50: number; p99: number } }> {
  const conns: Redis[] = [];
  const conn = (): Redis => {
    const r = new Redis(url, { maxRetriesPerRequest: null });
    conns.push(r);
    return r;
  };
  const names = ['r1', 'r2', 'r3'];
  const queues = names.map((n) => new Queue(n, { connection: conn(), prefix: 'rawbench' }));
  const opts = { removeOnComplete: true, removeOnFail: 1000 };
  let done = 0;
  let target = 0;
  let onDone: (() => void) | undefined;
  const hops: number[] = [];
  let recordHops = false;
  const workers = names.map((n, i) => new Worker(n, async (job) => {
    const now = nowMs();
    if (recordHops && i > 0) hops.push(now - (job.data as { t: number }).t);
    if (i < names.length - 1) await queues[i + 1]!.add('j', { p: (job.data as { p: string }).p, t: nowMs() }, opts);
    else if (++done >= target) onDone?.();
  }, { connection: conn(), prefix: 'rawbench', concurrency: 1 }));
  const run = async (count: number, sequential: boolean): Promise<number> => {
    done = 0;
    target = sequential ? 1 : count;
    const t0 = performance.now();
    if (sequential) {
      for (let i = 0; i < count; i++) {
        done = 0;
        const p = new Promise<void>((r) => (onDone = r));
        await queues[0]!.add('j', { p: PAYLOAD.toString(), t: Date.now() }, opts);
        await p;
      }
    } else {
      const p = new Promise<void>((r) => (onDone = r));
      // Same batching as Jupiter's source (100 items per round trip).
      for (let i = 0; i < count; i += 100) {
        const n = Math.min(100, count - i);
        await queues[0]!.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: { p: PAYLOAD.toString(), t: Date.now() }, opts })));
      }
      await p;
    }
    return performance.now() - t0;
  };
  try {
    await Promise.all(workers.map((w) => w.waitUntilReady()));
    await run(20, false);
    log(`raw BullMQ: ${N} items through a chain of 3 queues ...`);
    await conns[0]!.config('RESETSTAT');
    const ms = await run(N, false);
    log(`raw: Redis per item: ${(await redisCost(conns[0]!, N)).top}`);
    recordHops = true;
    await run(LAT_N, true);
    return { throughput: N / (ms / 1000), hop: stats(hops) };
  } finally {
    await Promise.all(workers.map((w) => w.close()));
    await Promise.all(queues.map((q) => q.close()));
    await Promise.all(conns.map((c) => c.quit().catch(() => undefined)));
  }
}

/** The raw chain with each stage in its own process, like Jupiter's runners. */
async function benchRawProcesses(url: string): Promise<number> {
  const script = join(dirname(fileURLToPath(import.meta.url)), 'raw-stage.js');
  const kids = [0, 1, 2].map((i) => fork(script, [url, String(i), '3'], { stdio: 'ignore' }));
  const q = new Queue('r1', { connection: new Redis(url, { maxRetriesPerRequest: null }), prefix: 'rawproc' });
  try {
    await Promise.all(kids.map((k) => new Promise((r) => k.once('message', r))));
    let seen = 0;
    let wake: (() => void) | undefined;
    kids[2]!.on('message', (n: unknown) => {
      if (typeof n === 'number') seen = n;
      wake?.();
    });
    const run = async (count: number): Promise<number> => {
      const target = seen + count;
      const t0 = performance.now();
      for (let i = 0; i < count; i += 100) {
        const n = Math.min(100, count - i);
        await q.addBulk(Array.from({ length: n }, () => ({ name: 'j', data: { p: PAYLOAD.toString(), t: Date.now() }, opts: { removeOnComplete: true } })));
      }
      while (seen < target) await new Promise<void>((r) => (wake = r));
      return performance.now() - t0;
    };
    await run(20);
    log(`raw BullMQ, one process per stage: ${N} items ...`);
    const ms = await run(N);
    return N / (ms / 1000);
  } finally {
    kids.forEach((k) => k.kill('SIGTERM'));
    await q.close();
    await (q.opts.connection as Redis).quit?.().catch(() => undefined);
  }
}

function redisBenchmark(port: number): { rps: number; p50Ms: number } {
  const out = execFileSync('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '-c', '1', '-n', '20000', '-t', 'ping', '-q'], { encoding: 'utf8' });
  const line = out.split(/\r|\n/).filter((l) => l.includes('PING_MBULK')).pop() ?? out;
  const rps = Number(/([\d.]+) requests per second/.exec(line)?.[1] ?? NaN);
  const p50 = Number(/p50=([\d.]+) msec/.exec(line)?.[1] ?? NaN);
  return { rps, p50Ms: Number.isFinite(p50) ? p50 : 1000 / rps };
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'jupiter-bench-'));
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  try {
    const rb = redisBenchmark(server.port);
    const only = process.env.BENCH_ONLY === 'ours';
    const raw = only ? { throughput: NaN, hop: { p50: NaN, p99: NaN } } : await benchRaw(server.url);
    const rawProc = only ? NaN : await benchRawProcesses(server.url);
    const ours = await benchOurs(server.url, root);
    const f = (x: number, d = 2): string => x.toFixed(d);
    console.log(`\nbench:pipeline  (${N} items, 100-byte payload, 3 stages, one Redis on loopback)`);
    console.log(`  redis-benchmark PING, 1 client   ${f(rb.rps, 0)} req/s, round trip p50 ${f(rb.p50Ms, 3)} ms`);
    console.log(`  raw BullMQ chain                 ${f(raw.throughput, 0)} items/s, hop p50 ${f(raw.hop.p50)} ms, p99 ${f(raw.hop.p99)} ms (in-process)`);
    console.log(`  raw BullMQ, process per stage    ${f(rawProc, 0)} items/s`);
    console.log(`  Jupiter (process runtime)        ${f(ours.throughput, 0)} items/s, hop p50 ${f(ours.hop.p50)} ms, p99 ${f(ours.hop.p99)} ms`);
    const ratio = ours.throughput / raw.throughput;
    console.log(`  throughput ratio Jupiter/raw     ${f(ratio)}  (target >= 0.50: ${ratio >= 0.5 ? 'met' : 'NOT met'})`);
    console.log(`  ratio Jupiter/raw process-per-stage ${f(ours.throughput / rawProc)}`);
    console.log(`  hop p50 Jupiter/raw              ${f(ours.hop.p50 / raw.hop.p50)}x;  = ${f(ours.hop.p50 / rb.p50Ms, 0)} Redis round trips  (target p50 < 2 ms: ${ours.hop.p50 < 2 ? 'met' : 'NOT met'})`);
  } finally {
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
