// npm run bench:scale — many tasks and many apps on the embedded default (process runtime, one
// machine, logical nodes node1..node3), against a private Redis:
//   exec     execution profiling of a generated BENCH_TASKS-task app (ccrapp style, ccr-app.ts)
//            on every node at once, as deploy asks the node agents to; baseline: one bare
//            `python3 -c pass` per task and node, nodes at once (the old profiler's floor; sampled)
//   runners  the same app's runners (round-robin over the nodes) + the home sink: ms from
//            start to every runner consuming, memory of all its processes (PSS), Redis clients,
//            memory and keys, BENCH_ITEMS items through the DAG, `status` and teardown times;
//            baseline: BENCH_TASKS bare `node -e 0` started at once (a process per task's floor;
//            60 started, scaled)
//   apps     BENCH_APPS apps of BENCH_APP_TASKS tasks side by side: all streaming, `status` of
//            all of them, Redis clients and memory, memory of all their processes
//   docker   the BENCH_TASKS-task app on the docker runtime (a container per task, Jupiter's
//            model) on a private dockerd: containers, ms to every runner consuming, memory of
//            their processes (PSS, the same yardstick as the process runtime), items, teardown;
//            skipped with the reason when no dockerd can start here
// BENCH_PARTS picks parts (default exec,runners,apps,docker). Results: bench/results/scale.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { machineQueues } from '../../orchestrator/profiles/exec.js';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import { HOME, type AppSpec, type ClusterConfig } from '../../config/types.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { appKeys, configureApp, connectRedis, getStatus, submitItems, teardownAppKeys, waitForItems } from '../../circe/index.js';
import { ProcessRuntime } from '../../circe/runtime/process.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import { ensureBaseImage } from '../../circe/runtime/docker-base.js';
import type { RunnerSpec, Runtime } from '../../circe/runtime/types.js';
import { dockerCluster } from '../../test/docker/fixture.js';
import { dockerdSkipReason, startTestDockerd, type TestDockerd } from '../../test/support/dockerd.js';
import { profileApp } from '../../profilers/exec/profile-app.js';
import { writeCcrApp } from './ccr-app.js';
import { deploymentMemory, mb, redisFigures } from './measure.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 200);
const APPS = Number(process.env.BENCH_APPS ?? 10);
const APP_TASKS = Number(process.env.BENCH_APP_TASKS ?? 20);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 5);
const NODES = ['node1', 'node2', 'node3'];
const PARTS = (process.env.BENCH_PARTS ?? 'exec,runners,apps,docker').split(',');
const PREFIX = 'jbenchscale:';
/** Baseline processes actually started (per node for exec); the baseline is scaled from them. */
const BASE_SAMPLE = 15;
const here = dirname(fileURLToPath(import.meta.url));
const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, Math.round(performance.now() - t0)];
}

/** ms until `count` processes `cmd args` have exited, started `parallel` at a time per lane, lanes at once. */
async function bare(cmd: string, args: string[], lanes: number, perLane: number): Promise<number> {
  const one = (): Promise<void> => new Promise((res, rej) => {
    const c = spawn(cmd, args, { stdio: 'ignore' });
    c.on('error', rej);
    c.on('exit', () => res());
  });
  const t0 = performance.now();
  await Promise.all(Array.from({ length: lanes }, async () => {
    for (let i = 0; i < perLane; i++) await one();
  }));
  return Math.round(performance.now() - t0);
}

async function bareAtOnce(cmd: string, args: string[], count: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: count }, () => new Promise<void>((res, rej) => {
    const c = spawn(cmd, args, { stdio: 'ignore' });
    c.on('error', rej);
    c.on('exit', () => res());
  })));
  return Math.round(performance.now() - t0);
}

interface Deployed {
  app: AppSpec;
  readyMs: number;
  /** ms from start to each runner's readiness entry. */
  perRunnerMs: number[];
}

async function waitReady(redis: Redis, app: AppSpec, t0: number, timeoutMs: number): Promise<number[]> {
  const key = appKeys(PREFIX, app.name).ready;
  const want = [...app.dagTasks, HOME];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await redis.hgetall(key);
    if (want.every((t) => h[t])) return want.map((t) => (JSON.parse(h[t]!) as { at: number }).at - t0);
    if (Date.now() > deadline) throw new Error(`${app.name}: runners not ready within ${timeoutMs} ms (${want.filter((t) => !h[t]).length} missing)`);
    await sleep(50);
  }
}

/**
 * Start the sink and every runner (round-robin over the nodes) like deploy's start step; the
 * tasks' runners on `tasks` (another runtime: docker), the sink always a local process.
 */
async function deploy(app: AppSpec, redis: Redis, url: string, runtime: ProcessRuntime, cluster: ClusterConfig, tasks?: { runtime: Runtime; cluster: ClusterConfig }): Promise<Deployed> {
  await configureApp(redis, PREFIX, app.name, {});
  const spec = (task: string, node: string): RunnerSpec => ({ app: app.name, task, node, runId: 'bench', redisUrl: url, redisPrefix: PREFIX });
  const t0 = Date.now();
  await Promise.all([
    runtime.start(app, [spec(HOME, HOME)], cluster),
    (tasks?.runtime ?? runtime).start(app, app.tasks.map((t, i) => spec(t.name, NODES[i % NODES.length]!)), tasks?.cluster ?? cluster),
  ]);
  const perRunnerMs = await waitReady(redis, app, t0, tasks ? 600_000 : 180_000);
  return { app, readyMs: Date.now() - t0, perRunnerMs };
}

/** Submit `n` copies of the sample input and wait until all are done; ms. */
async function stream(redis: Redis, app: AppSpec, root: string, n: number): Promise<number> {
  const dir = join(root, 'in', app.name);
  mkdirSync(dir, { recursive: true });
  const files = Array.from({ length: n }, (_, i) => {
    const f = join(dir, `${i + 1}x.txt`);
    writeFileSync(f, `item ${i + 1}\n`);
    return f;
  });
  const [, ms] = await timed(async () => {
    const items = await submitItems(redis, PREFIX, app, files, { runId: 'bench' });
    const res = await waitForItems(redis, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 180_000, pollMs: 50 });
    const bad = res.filter((r) => !r.done || r.failed);
    if (bad.length > 0) throw new Error(`${app.name}: ${bad.length} item(s) not delivered: ${JSON.stringify(bad[0])}`);
  });
  return ms;
}

/** What `jupiter status` reads for each app (app folder, queues, counts, makespans), apps at once as it does. */
async function statusOf(redis: Redis, apps: AppSpec[]): Promise<{ ms: number; cpuMs: number }> {
  const cpu0 = process.cpuUsage();
  const [, ms] = await timed(() => Promise.all(apps.map(async (a) => getStatus(redis, PREFIX, await loadApp(a.dir)))));
  const cpu = process.cpuUsage(cpu0);
  // CPU time of this process: what status costs whatever else the machine runs.
  return { ms, cpuMs: Math.round((cpu.user + cpu.system) / 1000) };
}

/** The big app with a container per task on a private dockerd (as bench:deploy starts one). */
async function dockerPart(app: AppSpec, redis: Redis, url: string, runtime: ProcessRuntime, cluster: ClusterConfig, results: Record<string, unknown>): Promise<string[]> {
  const skipped = (why: string): string[] => {
    results.docker = { skipped: why };
    log(`docker: skipped (${why})`);
    return [`| ${TASKS} tasks on the docker runtime | skipped | reported | | ${why} |`];
  };
  const reason = dockerdSkipReason();
  if (reason) return skipped(reason);
  log(`docker: ${TASKS} containers on a private dockerd ...`);
  let engine: TestDockerd;
  try {
    engine = await startTestDockerd();
  } catch (e) {
    return skipped(`dockerd cannot start here: ${(e as Error).message.split('\n')[0]}`);
  }
  const rt = new DockerRuntime();
  const dc = dockerCluster(NODES.map((name) => ({ name, endpoint: engine.endpoint })));
  Object.assign(dc, { redisUrl: url, redisPrefix: PREFIX, stateDir: cluster.stateDir });
  try {
    await ensureBaseImage(engine.docker);
    const [, prepareMs] = await timed(() => rt.prepare(app, dc));
    const d = await deploy(app, redis, url, runtime, cluster, { runtime: rt, cluster: dc });
    const containers = (await rt.list(app.name, dc)).length;
    const mem = deploymentMemory([app.name], PREFIX);
    const rf = await redisFigures(redis);
    log(`  ${containers} containers consuming ${d.readyMs} ms after start; PSS ${mb(mem.pssBytes)} (${mem.processes} processes)`);
    const streamMs = await stream(redis, app, join(cluster.stateDir, '..'), ITEMS);
    const [, teardownMs] = await timed(async () => {
      await rt.teardown(app.name, dc);
      await runtime.teardown(app.name, cluster);
    });
    await teardownAppKeys(redis, PREFIX, app.name);
    const slowest = Math.max(...d.perRunnerMs);
    results.docker = { containers, prepareMs, readyMs: d.readyMs, slowestRunnerMs: slowest, p50RunnerMs: pct(d.perRunnerMs, 0.5), memory: mem, redis: rf, streamMs, items: ITEMS, teardownMs, storageDriver: engine.storageDriver, limits: { cpus: dc.docker.cpus, memoryMb: dc.docker.memoryMb } };
    return [
      `| ${TASKS} tasks on the docker runtime: containers / every runner consuming | ${containers} containers / ${(slowest / 1000).toFixed(1)} s (median ${(pct(d.perRunnerMs, 0.5) / 1000).toFixed(1)} s) | reported | | containerd shims not counted; image prepare ${(prepareMs / 1000).toFixed(1)} s before; private dockerd (${engine.storageDriver}), ${dc.docker.cpus} CPU / ${dc.docker.memoryMb} MB limits a container |`,
      `| docker runtime: memory (PSS, ${mem.processes} processes) / Redis | ${mb(mem.pssBytes)} (${mb(mem.pssBytes / TASKS)} a task) / ${rf.clients} clients | reported | | ${Object.entries(mem.byKind).map(([k, v]) => `${k} ${v.processes}x ${mb(v.pssBytes)}`).join(', ')}; ${ITEMS} items in ${(streamMs / 1000).toFixed(1)} s; teardown ${(teardownMs / 1000).toFixed(1)} s |`,
    ];
  } finally {
    await rt.teardown(app.name, dc).catch(() => undefined);
    await engine.stop();
  }
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;

async function main(): Promise<void> {
  const out = process.env.BENCH_RESULTS ?? join(here, '..', '..', '..', 'bench', 'results', 'scale.json');
  const root = mkdtempSync(join(tmpdir(), 'jscale-bench-'));
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redis = connectRedis(server.url);
  const cluster = { stateDir: join(root, '.jupiter') } as ClusterConfig;
  const runtime = new ProcessRuntime({ runsDir: join(root, 'runs'), stopGraceSec: 20 });
  const results: Record<string, unknown> = {
    bench: 'scale', at: new Date().toISOString(), tasks: TASKS, apps: APPS, appTasks: APP_TASKS, nodes: NODES.length, cpus: cpus().length, loadavgAtStart: loadavg(), node: process.version,
  };
  const lines: string[] = [];
  const deployed: AppSpec[] = [];
  log(`bench:scale — ${TASKS}-task app, ${APPS} apps of ${APP_TASKS}, ${NODES.length} logical nodes, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}; parts ${PARTS.join(',')}`);
  try {
    const big = await loadApp(writeCcrApp(root, `ccrapp${TASKS}`, { tasks: TASKS, seed: 17 }));
    const idle = await redisFigures(redis);

    if (PARTS.includes('exec')) {
      // The nodes share this machine: as many at once as it has cores, as deploy asks them
      // (orchestrator/profiles/exec.ts machineQueues).
      const queues = machineQueues(NODES, () => ({ host: 'this', cores: cpus().length }));
      const inTurn = <T>(f: (n: string) => Promise<T>): Promise<T[]> => Promise.all(queues.map(async (q) => {
        const out: T[] = [];
        for (const n of q) out.push(await f(n));
        return out;
      })).then((qs) => qs.flat());
      log(`exec: profiling ${TASKS} tasks on ${NODES.length} nodes, ${queues.length} at a time (one machine) ...`);
      const [res, ms] = await timed(() => inTurn((n) => profileApp(big, n, { workDir: root })));
      const failed = res.flatMap((r) => r.failed);
      if (failed.length > 0) throw new Error(`exec profiling failed: ${JSON.stringify(failed[0])}`);
      // Sampled (BASE_SAMPLE per node) and scaled to every task: hundreds of starts would take minutes on a loaded machine.
      const sample = Math.min(TASKS, BASE_SAMPLE);
      const baseMs = Math.round((await bare(process.env.JUPITER_PYTHON ?? 'python3', ['-c', 'pass'], NODES.length, sample)) * (TASKS / sample));
      // Again, unchanged (as a redeploy asks): every profile is reused by content.
      const byNode = new Map(res.map((r) => [r.node, r]));
      const [again, reuseMs] = await timed(() => inTurn((n) => profileApp(big, n, { workDir: root, reuse: new Map(byNode.get(n)!.profiles.map((p) => [p.task, p])) })));
      const reused = again.reduce((a, r) => a + r.reused.length, 0);
      results.exec = { ms, profiled: res.reduce((a, r) => a + r.profiles.length, 0), baselineMs: baseMs, ratio: ms / baseMs, unchangedMs: reuseMs, reused };
      lines.push(`| execution profiling, ${TASKS} tasks x ${NODES.length} nodes, ${queues.length} at a time | ${(ms / 1000).toFixed(1)} s | <= 10 s | ${ms <= 10_000 ? 'met' : 'NOT met'} | ${(ms / baseMs).toFixed(2)}x ${TASKS * NODES.length} bare python3 starts (${(baseMs / 1000).toFixed(1)} s, scaled from ${NODES.length * Math.min(TASKS, BASE_SAMPLE)}) |`);
      lines.push(`| execution profiling again, app unchanged | ${reuseMs} ms | | | ${reused} of ${TASKS * NODES.length} profiles reused by content (inputsHash) |`);
      log(`  ${ms} ms (baseline ${baseMs} ms); unchanged again ${reuseMs} ms, ${reused} reused`);
    }

    if (PARTS.includes('runners')) {
      log(`runners: starting ${TASKS} runners + sink ...`);
      const d = await deploy(big, redis, server.url, runtime, cluster);
      deployed.push(big);
      const mem = deploymentMemory([big.name], PREFIX);
      const rf = await redisFigures(redis);
      log(`  ready in ${d.readyMs} ms; ${mem.processes} processes, PSS ${mb(mem.pssBytes)}; Redis ${rf.clients} clients, ${mb(rf.usedMemoryBytes)}`);
      const streamMs = await stream(redis, big, root, ITEMS);
      const { ms: statusMs } = await statusOf(redis, [big]);
      const after = await redisFigures(redis);
      const [, teardownMs] = await timed(() => runtime.teardown(big.name, cluster));
      deployed.pop();
      await teardownAppKeys(redis, PREFIX, big.name);
      const sample = Math.min(TASKS, 4 * BASE_SAMPLE);
      const baseMs = Math.round((await bareAtOnce(process.execPath, ['-e', '0'], sample)) * (TASKS / sample));
      const slowest = Math.max(...d.perRunnerMs);
      results.runners = { readyMs: d.readyMs, slowestRunnerMs: slowest, p50RunnerMs: pct(d.perRunnerMs, 0.5), memory: mem, redis: rf, redisAfterItems: after, redisIdle: idle, streamMs, items: ITEMS, statusMs, teardownMs, baselineMs: baseMs, ratio: slowest / baseMs };
      lines.push(`| every runner consuming after start, ${TASKS} tasks | ${(slowest / 1000).toFixed(1)} s (median ${(pct(d.perRunnerMs, 0.5) / 1000).toFixed(1)} s) | <= 15 s | ${slowest <= 15_000 ? 'met' : 'NOT met'} | ${(slowest / baseMs).toFixed(2)}x ${TASKS} bare node starts at once (${(baseMs / 1000).toFixed(1)} s) |`);
      lines.push(`| CPU time to start them all (every process of the deployment) | ${(mem.cpuMs / 1000).toFixed(1)} s = ${(mem.cpuMs / 1000 / cpus().length).toFixed(1)} s on ${cpus().length} idle cores | | | ${Object.entries(mem.byKind).map(([k, v]) => `${k} ${(v.cpuMs / 1000).toFixed(1)} s`).join(', ')} |`);
      lines.push(`| memory of the deployment (PSS, ${mem.processes} processes) | ${mb(mem.pssBytes)} (${mb(mem.pssBytes / TASKS)} a task) | <= 3 GB | ${mem.pssBytes <= 3 * 1024 ** 3 ? 'met' : 'NOT met'} | RSS sum ${mb(mem.rssBytes)}; ${Object.entries(mem.byKind).map(([k, v]) => `${k} ${v.processes}x ${mb(v.pssBytes)}`).join(', ')} |`);
      lines.push(`| Redis with ${TASKS} runners | ${rf.clients} clients, ${mb(rf.usedMemoryBytes)}, ${after.keys} keys after ${ITEMS} items | reported | | idle ${idle.clients} clients ${mb(idle.usedMemoryBytes)} |`);
      lines.push(`| ${ITEMS} items through ${TASKS} tasks / status / teardown | ${streamMs} ms / ${statusMs} ms / ${teardownMs} ms | reported | | |`);
    }

    if (PARTS.includes('apps')) {
      log(`apps: ${APPS} apps of ${APP_TASKS} tasks side by side ...`);
      const apps = await Promise.all(Array.from({ length: APPS }, (_, i) => loadApp(writeCcrApp(root, `ccr${APP_TASKS}n${i}`, { tasks: APP_TASKS, seed: 100 + i }))));
      const [ds, startMs] = await timed(() => Promise.all(apps.map((a) => deploy(a, redis, server.url, runtime, cluster))));
      deployed.push(...apps);
      const mem = deploymentMemory(apps.map((a) => a.name), PREFIX);
      const rf = await redisFigures(redis);
      const [streams, streamMs] = await timed(() => Promise.all(apps.map((a) => stream(redis, a, root, ITEMS))));
      const { ms: statusMs, cpuMs: statusCpuMs } = await statusOf(redis, apps);
      const after = await redisFigures(redis);
      const [, teardownMs] = await timed(() => Promise.all(apps.map((a) => runtime.teardown(a.name, cluster))));
      deployed.length = 0;
      for (const a of apps) await teardownAppKeys(redis, PREFIX, a.name);
      results.apps = { startMs, slowestRunnerMs: Math.max(...ds.flatMap((d) => d.perRunnerMs)), memory: mem, redis: rf, redisAfterItems: after, streamMs, perAppStreamMs: streams, statusMs, statusCpuMs, teardownMs };
      lines.push(`| ${APPS} apps x ${APP_TASKS} tasks: all streaming | ${APPS}/${APPS} apps, ${ITEMS} items each in ${(streamMs / 1000).toFixed(1)} s | all | met | all ready in ${(startMs / 1000).toFixed(1)} s |`);
      lines.push(`| ${APPS} apps: status of all | ${statusMs} ms | <= 1 s | ${statusMs <= 1000 ? 'met' : 'NOT met'} | ${statusCpuMs} ms of CPU; in-process (the CLI adds its own start) |`);
      lines.push(`| ${APPS} apps: Redis / memory | ${rf.clients} clients, ${mb(rf.usedMemoryBytes)}, ${after.keys} keys; PSS ${mb(mem.pssBytes)} (${mem.processes} processes) | reported | | teardown ${teardownMs} ms |`);
    }

    if (PARTS.includes('docker')) lines.push(...await dockerPart(big, redis, server.url, runtime, cluster, results));
  } finally {
    for (const a of deployed) await runtime.teardown(a.name, cluster).catch(() => undefined);
    await redis.quit().catch(() => undefined);
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
  results.loadavgAtEnd = loadavg();
  const table = ['| measure | value | target | | vs baseline / notes |', '|---|---|---|---|---|', ...lines].join('\n');
  process.stdout.write(`\nbench:scale (${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)} at the end; shared machine)\n${table}\n`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ ...results, table }, null, 2)}\n`);
  log(`results: ${out}`);
}

main().then(() => process.exit(0), (e: unknown) => {
  log(`bench:scale failed: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});
