// npm run bench:startup — how long task runners take to start: from spawn to the runner's entry
// in the readiness hash (<prefix>app:<app>:ready), which is what `jupiter deploy` waits for
// before it feeds inputs. Measured on apps/dummy (7 Python tasks) against a private Redis:
//   one:  a single runner (`node dist/circe/runner/main.js`, no supervisor) started alone
//   all:  the home sink + all 7 runners through the process runtime (supervisor + runner each),
//         started at once exactly like deploy's "Starting N task runner(s)" step
// Baselines in the same run: a plain `node -e 0` (spawn -> exit) alone, and 2N of them at once
// (the process runtime starts a supervisor and a runner per task). Ratios = ours / baseline, so
// a busy shared machine shifts both sides. CPU ms per runner (from /proc at readiness) shows the
// start-up work independently of load. Environment: BENCH_ROUNDS (5), BENCH_APP (apps/dummy).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { cpuUs } from '../proc-cpu.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys, SINK_QUEUE } from '../../circe/queue/keys.js';
import { teardownAppKeys } from '../../circe/queue/teardown.js';
import { runnerEnv } from '../../circe/runner/env.js';
import { ProcessRuntime } from '../../circe/runtime/process.js';

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const PREFIX = 'benchstart:';
const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const runnerMain = join(here, '..', '..', 'circe', 'runner', 'main.js');
const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

const cpuMs = (pid: number): number => cpuUs(pid) / 1000;

/** ms from spawn to exit of `count` plain node processes started at once (slowest of them). */
async function bareNodes(count: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: count }, () => new Promise<void>((res, rej) => {
    const c = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
    c.on('error', rej);
    c.on('exit', () => res());
  })));
  return performance.now() - t0;
}

/** Readiness entries ({node, pid, at}) once every task in `tasks` has one. */
async function waitReady(redis: Redis, key: string, tasks: string[]): Promise<Map<string, { pid: number; at: number }>> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const h = await redis.hgetall(key);
    if (tasks.every((t) => h[t])) return new Map(tasks.map((t) => [t, JSON.parse(h[t]!) as { pid: number; at: number }]));
    if (Date.now() > deadline) throw new Error(`runners not ready within 60 s: ${tasks.filter((t) => !h[t]).join(', ')}`);
    await sleep(5);
  }
}

/** One runner alone, no supervisor: ms from spawn to its readiness entry, and its CPU ms. */
async function oneRunner(app: AppSpec, redis: Redis, url: string, root: string): Promise<{ ms: number; cpu: number }> {
  const task = app.dagTasks[0]!;
  const key = appKeys(PREFIX, app.name).ready;
  await redis.del(key);
  const env = runnerEnv({ app: app.name, task, node: 'local', runId: 'bench', redisUrl: url, redisPrefix: PREFIX }, app.dir, { workDir: join(root, 'work-one') });
  const t0 = Date.now();
  const child = spawn(process.execPath, ['--enable-source-maps', runnerMain], { stdio: 'ignore', env: { ...process.env, ...env } });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  try {
    const ready = await waitReady(redis, key, [task]);
    return { ms: ready.get(task)!.at - t0, cpu: cpuMs(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** The deploy step: sink + every task through the process runtime, at once. */
async function allRunners(app: AppSpec, redis: Redis, url: string, root: string, round: number): Promise<{ ms: number; perRunner: number[]; cpu: number[] }> {
  const key = appKeys(PREFIX, app.name).ready;
  await redis.del(key);
  const cluster = { stateDir: join(root, `.jupiter-${round}`) } as ClusterConfig;
  const runtime = new ProcessRuntime({ runsDir: join(root, 'runs'), stopGraceSec: 10 });
  const spec = (task: string, node: string) => ({ app: app.name, task, node, runId: `r${round}`, redisUrl: url, redisPrefix: PREFIX });
  const t0 = Date.now();
  try {
    await runtime.start(app, [spec(SINK_QUEUE, SINK_QUEUE)], cluster);
    await runtime.start(app, app.tasks.map((t) => spec(t.name, 'local')), cluster);
    const ready = await waitReady(redis, key, [...app.dagTasks, SINK_QUEUE]);
    const ms = Date.now() - t0;
    const entries = [...ready.values()];
    return { ms, perRunner: entries.map((e) => e.at - t0), cpu: entries.map((e) => cpuMs(e.pid)) };
  } finally {
    await runtime.teardown(app.name, cluster);
  }
}

async function main(): Promise<void> {
  const app = await loadApp(process.env.BENCH_APP ?? join(repo, 'apps', 'dummy'));
  const root = mkdtempSync(join(tmpdir(), 'jupiter-bench-startup-'));
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redis = connectRedis(server.url);
  const n = app.tasks.length + 1;
  log(`bench:startup — ${app.name}: ${app.tasks.length} runners + sink, ${ROUNDS} rounds, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)}`);
  const rows: Array<{ node1: number; nodeN: number; one: number; oneCpu: number; all: number; perRunner: number; cpu: number }> = [];
  try {
    await bareNodes(1); // warm the file cache for both sides
    await oneRunner(app, redis, server.url, root);
    for (let r = 0; r < ROUNDS; r++) {
      // Interleaved, so that a burst of load elsewhere hits both sides of a ratio.
      const node1 = await bareNodes(1);
      const one = await oneRunner(app, redis, server.url, root);
      const nodeN = await bareNodes(2 * n);
      const all = await allRunners(app, redis, server.url, root, r);
      rows.push({ node1, nodeN, one: one.ms, oneCpu: one.cpu, all: all.ms, perRunner: median(all.perRunner), cpu: median(all.cpu) });
      log(`  round ${r + 1}: node -e 0 ${node1.toFixed(0)} ms, one runner ${one.ms} ms (cpu ${one.cpu} ms); ${2 * n}x node -e 0 ${nodeN.toFixed(0)} ms, ${n} runners ${all.ms} ms (median runner ${median(all.perRunner)} ms, cpu ${median(all.cpu)} ms)`);
    }
  } finally {
    await teardownAppKeys(redis, PREFIX, app.name).catch(() => undefined);
    await redis.quit().catch(() => undefined);
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
  const m = (k: keyof (typeof rows)[number]): number => median(rows.map((r) => r[k]));
  const ratio = (a: keyof (typeof rows)[number], b: keyof (typeof rows)[number]): number => median(rows.map((r) => r[a] / r[b]));
  process.stdout.write([
    `runner start-up, spawn -> ready (medians of ${ROUNDS} rounds)`,
    `  one runner alone        ${m('one').toFixed(0)} ms, cpu ${m('oneCpu').toFixed(0)} ms   vs node -e 0: ${m('node1').toFixed(0)} ms   ratio ${ratio('one', 'node1').toFixed(2)}x`,
    `  ${n} at once (deploy step) ${m('all').toFixed(0)} ms (median runner ${m('perRunner').toFixed(0)} ms, cpu ${m('cpu').toFixed(0)} ms each)   vs ${2 * n}x node -e 0: ${m('nodeN').toFixed(0)} ms   ratio ${ratio('all', 'nodeN').toFixed(2)}x`,
    '',
  ].join('\n'));
}

main().then(() => process.exit(0), (e: unknown) => {
  log(`bench:startup failed: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});
