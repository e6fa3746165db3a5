// bench:fidelity, part `dag`: a generated N-task app (bench/scale's ccrapp style: no-op-sized Python
// tasks, a random layered DAG) on the embedded default's shape: three logical nodes on this machine,
// the process runtime, a private Redis. The profile is built the way the agents build it: an
// execution profile per node (profileApp), the control costs and the home's links per node
// (profilers/overhead: measureOverhead, measureHomeLinks). HEFT maps on it; the runners start where
// it says; then BENCH_ITEMS items one at a time: measured p50 against the prediction with the
// measured costs, and against the model without them (what `deploy` predicted before).
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import { HOME, type AppSpec, type ClusterConfig, type ProfileSnapshot } from '../../config/types.js';
import { redisKeys } from '../../config/redis-keys.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { appKeys, configureApp, connectRedis, DoneWaiter, submitItems, teardownAppKeys } from '../../circe/index.js';
import { ProcessRuntime } from '../../circe/runtime/process.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import { profileApp } from '../../profilers/exec/profile-app.js';
import { machineId } from '../../circe/runtime/machine.js';
import { measureHomeLinks, measureOverhead } from '../../profilers/overhead/prober.js';
import { mappers, problemFromProfiles } from '../../mappers/index.js';
import { writeCcrApp } from '../scale/ccr-app.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { cpuUs, descendants } from '../proc-cpu.js';

const NODES = ['node1', 'node2', 'node3'];
const PREFIX = 'jbenchfid:';

export interface DagRow {
  tasks: number;
  mapper: string;
  predictedMs: number;
  /** The same mapping under the model without the measured costs (no overheads, no home hops). */
  predictedWithoutCostsMs: number;
  measuredP50Ms: number;
  ratio: number;
  overheads: { hopMs: number; invokeMs: number; taskCpuMs: number };
  /** The same mapping on three nodes of their own (no shared host): what the model predicted before the hosts. */
  predictedUnsharedMs: number;
  /** What the runtime records say an item paid (medians over tasks and items, ms): a task's start after its last input's finish, a task's run. */
  observed: { hopMs: number; runMs: number; profiledExecMs: number };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** CPU µs of this process's descendants by kind (node hosts, Python workers, Redis), by pid. */
function cpuByKind(): Map<number, { kind: string; us: number }> {
  const out = new Map<number, { kind: string; us: number }>();
  for (const p of descendants(process.pid)) {
    let comm = '';
    try {
      comm = readFileSync(`/proc/${p}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const us = cpuUs(p);
    if (Number.isFinite(us)) out.set(p, { kind: /python/i.test(comm) ? 'python' : comm.startsWith('redis') ? 'redis' : 'node', us });
  }
  return out;
}
function cpuDelta(a: Map<number, { kind: string; us: number }>, b: Map<number, { kind: string; us: number }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [p, v] of b) out[v.kind] = (out[v.kind] ?? 0) + (v.us - (a.get(p)?.us ?? 0)) / 1000;
  return out;
}

async function waitReady(redis: Redis, app: AppSpec, timeoutMs: number): Promise<void> {
  const key = appKeys(PREFIX, app.name).ready;
  const want = [...app.dagTasks, HOME];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const h = await redis.hgetall(key);
    if (want.every((t) => h[t])) return;
    if (Date.now() > deadline) throw new Error(`${app.name}: runners not ready within ${timeoutMs} ms (${want.filter((t) => !h[t]).length} missing)`);
    await sleep(100);
  }
}

/** Profile, map, run: one row per task count. */
export async function dagFidelity(root: string, sizes: number[], items: number, log: (m: string) => void): Promise<DagRow[]> {
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redis = connectRedis(server.url);
  const cluster = { stateDir: join(root, '.jupiter') } as ClusterConfig;
  const runtime = new ProcessRuntime({ runsDir: join(root, 'runs'), stopGraceSec: 20 });
  const keys = redisKeys(PREFIX);
  const rows: DagRow[] = [];
  const timeline: unknown[] = [];
  try {
    // The control costs and home links of each logical node, one node after the other, as its agent measures them.
    const overheads = [];
    const homeLinks = [];
    for (const n of NODES) {
      overheads.push(await measureOverhead(redis, keys, n, 7));
      homeLinks.push(...(await measureHomeLinks(redis, keys, n, [16 * 1024, 256 * 1024], 7)));
    }
    const hopMs = median(overheads.map((o) => o.hopSec)) * 1000;
    const invokeMs = median(overheads.map((o) => o.invokeSec)) * 1000;
    const taskCpuMs = median(overheads.map((o) => o.taskCpuSec ?? 0)) * 1000;
    log(`  measured per node: empty hop ${hopMs.toFixed(2)} ms, empty invocation ${invokeMs.toFixed(2)} ms, a no-op task through the runner ${taskCpuMs.toFixed(2)} ms CPU`);
    for (const size of sizes) {
      const app = await loadApp(writeCcrApp(root, `fidccr${size}`, { tasks: size, seed: 17 }));
      log(`dag: ${size} tasks: execution profile on ${NODES.length} nodes ...`);
      // One machine: its nodes profile one after the other, as deploy asks them to.
      const res = [];
      for (const n of NODES) res.push(await profileApp(app, n, { workDir: root }));
      const now = Date.now();
      const snap: ProfileSnapshot = {
        takenAt: now,
        // One machine: the three logical nodes share its cores, as the agents' resource profiles say.
        nodes: NODES.map((node) => ({ node, cpuPercent: 10, cpuMean: 10, memPercent: 10, memMean: 10, cores: cpus().length, host: machineId(), load1: 0, freeMemBytes: 1e9, updatedAt: now })),
        links: [],
        exec: res.flatMap((r) => r.profiles),
        overheads,
        homeLinks,
      };
      const problem = problemFromProfiles(app, snap, { nodes: NODES });
      const bare = problemFromProfiles(app, { ...snap, overheads: undefined, homeLinks: undefined }, { nodes: NODES });
      const unshared = { ...problem, hostCores: undefined };
      const r = mappers.heft!(problem);
      const { simulate } = await import('../../mappers/index.js');
      const without = simulate(bare, r.mapping).makespan;
      const unsharedMs = simulate(unshared, r.mapping, { policy: 'insertion' }).makespan * 1000;
      log(`  HEFT: predicted ${(r.makespan * 1000).toFixed(1)} ms (nodes not sharing the host's ${cpus().length} cores: ${unsharedMs.toFixed(1)} ms; without the measured costs ${(without * 1000).toFixed(1)} ms); starting ${size} runners + sink ...`);
      await configureApp(redis, PREFIX, app.name, {});
      const spec = (task: string, node: string): RunnerSpec => ({ app: app.name, task, node, runId: 'bench', redisUrl: server.url, redisPrefix: PREFIX });
      await Promise.all([
        runtime.start(app, [spec(HOME, HOME)], cluster),
        runtime.start(app, app.tasks.map((t) => spec(t.name, r.mapping[t.name] ?? NODES[0]!)), cluster),
      ]);
      let waiter: DoneWaiter | undefined;
      try {
        await waitReady(redis, app, 300_000);
        const dir = join(root, 'in', app.name);
        mkdirSync(dir, { recursive: true });
        const ms: number[] = [];
        const hops: number[] = [];
        const runs: number[] = [];
        const parentsOf = new Map<string, string[]>();
        for (const t of app.tasks) for (const c of t.children) if (c !== HOME) parentsOf.set(c, [...(parentsOf.get(c) ?? []), t.name]);
        // A blocking wait for each item's done event (no poll loading the 2 cores measured).
        waiter = new DoneWaiter(redis, PREFIX, app.name);
        await waiter.ready();
        for (let i = 0; i < items + 2; i++) {
          const f = join(dir, `${i + 1}x.txt`);
          writeFileSync(f, `item ${i + 1}\n`);
          const c0 = cpuByKind();
          const [it] = await submitItems(redis, PREFIX, app, [f], { runId: 'bench' });
          const [done] = await waiter.wait([it!], { timeoutMs: 120_000 });
          if (!done?.done || done.failed) throw new Error(`${app.name}: item ${it!.item} not delivered`);
          const span = Number(await redis.hget(appKeys(PREFIX, app.name).item(it!.item), 'makespanMs'));
          if (i < 2) continue; // two warm-up items
          const cpu = cpuDelta(c0, cpuByKind());
          if (process.env.BENCH_TIMELINE) {
            const rt0 = await redis.hgetall(appKeys(PREFIX, app.name).rt(it!.item));
            const entered = Number(await redis.hget(appKeys(PREFIX, app.name).item(it!.item), 'enteredAt'));
            timeline.push({ size, item: i, makespanMs: span, cpu, tasks: app.tasks.filter((x) => x.isDag).map((t) => ({ task: t.name, node: r.mapping[t.name], parents: parentsOf.get(t.name) ?? [], enter: Number(rt0[`${t.name}|enter`]) - entered, start: Number(rt0[`${t.name}|start`]) - entered, finish: Number(rt0[`${t.name}|finish`]) - entered })), predicted: Object.entries(r.schedule).map(([task, x]) => ({ task, node: x.node, start: x.start * 1000, finish: x.finish * 1000 })) });
            writeFileSync(process.env.BENCH_TIMELINE, JSON.stringify(timeline, null, 1));
          }
          log(`    item ${i}: ${span} ms, CPU ms ${Object.entries(cpu).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ')}`);
          ms.push(span);
          const rt = await redis.hgetall(appKeys(PREFIX, app.name).rt(it!.item));
          const at = (t: string, f: string): number => Number(rt[`${t}|${f}`]);
          for (const t of app.tasks.filter((x) => x.isDag)) {
            runs.push(at(t.name, 'finish') - at(t.name, 'start'));
            const ps = parentsOf.get(t.name) ?? [];
            if (ps.length) hops.push(at(t.name, 'start') - Math.max(...ps.map((p) => at(p, 'finish'))));
          }
        }
        const measured = median(ms);
        const observed = { hopMs: median(hops), runMs: median(runs), profiledExecMs: median(snap.exec.map((e) => e.durationSec * 1000)) };
        const row = { tasks: size, mapper: 'heft', predictedMs: r.makespan * 1000, predictedWithoutCostsMs: without * 1000, measuredP50Ms: measured, ratio: measured / (r.makespan * 1000), overheads: { hopMs, invokeMs, taskCpuMs }, predictedUnsharedMs: unsharedMs, observed };
        log(`  runtime records: a task starts ${observed.hopMs.toFixed(1)} ms after its last input's finish (p50), runs ${observed.runMs.toFixed(1)} ms (profiled ${observed.profiledExecMs.toFixed(2)} ms)`);
        log(`  ${items} isolated items: p50 ${measured.toFixed(1)} ms = ${row.ratio.toFixed(2)}x the prediction (${(measured / row.predictedWithoutCostsMs).toFixed(1)}x the model without costs)`);
        rows.push(row);
      } finally {
        waiter?.close();
        await runtime.teardown(app.name, cluster).catch(() => undefined);
        await teardownAppKeys(redis, PREFIX, app.name).catch(() => undefined);
      }
    }
  } finally {
    await redis.quit().catch(() => undefined);
    await server.stop();
  }
  return rows;
}
