// npm run bench:recovery — how fast a stream recovers from a lost node on the direct data path
// (lineage, circe/dataplane/lineage.ts), against the same stream without a loss, in one run:
//   app       a chain t0 -> t1 -> t2 of JavaScript tasks, 8 KiB per hop (over what travels
//             inline: every output stays on its node), in-process runners on named nodes, a real
//             redis-server, the sink at the home; nodes alive by their agents' heartbeat keys
//   normal    t0 and t1 on n0, t2 on n2: K items submitted at once, time until all delivered
//   lost      t0 and t1 on n0 run all K items while t2 is not running, so n0 keeps K outputs of t1
//             (and, held for them, K of t0); then n0 is lost: its runners stop, its store is
//             wiped, its heartbeat key goes; t0 and t1 start on n3 and n4 (as the reconciler
//             moves them) and t2 on n2: time from then until all K are delivered, re-runs counted
//     refused   n0's data endpoint refuses connections (its processes died, the machine is up)
//     silent    n0's data endpoint takes connections and answers nothing (the machine is gone;
//               a firewall that drops would look the same to the receiver: a timeout)
// Printed: seconds and the ratio to `normal` per case. Environment: BENCH_ITEMS (40),
// BENCH_TIMEOUT_S (240: a case that has not finished by then is reported as such),
// BENCH_RESULTS (bench/results/recovery.json).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { AppSpec } from '../../config/types.js';
import { heartbeat } from '../../profilers/agent/registry.js';
import { appKeys, configureApp, Sink, submitItems, TaskRunner, waitForItems } from '../../circe/index.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { renderTable } from '../../orchestrator/report/table.js';
import { silentEndpoint } from '../../test/support/silent-endpoint.js';
import { writeChainApp, writeItems } from '../../test/support/faults.js';

const here = dirname(fileURLToPath(import.meta.url));
const K = Number(process.env.BENCH_ITEMS ?? 40);
const TIMEOUT_S = Number(process.env.BENCH_TIMEOUT_S ?? 240);
const RESULTS = process.env.BENCH_RESULTS ?? resolve(here, '..', '..', '..', 'bench', 'results', 'recovery.json');
const PREFIX = 'jr:';
const BODY = 'x'.repeat(8192);

type Case = 'normal' | 'refused' | 'silent';

interface Outcome {
  case: Case;
  seconds: number | null;
  delivered: number;
  reruns: number;
  askedAhead: boolean;
}

async function alive(redis: Redis, node: string): Promise<void> {
  await heartbeat(redis, redisKeys(PREFIX), { node, host: '127.0.0.1', port: 1, pid: process.pid, startedAt: Date.now(), heartbeatAt: Date.now(), periodMs: 600_000, hostname: 'bench' });
}

async function runCase(redis: Redis, url: string, work: string, app: AppSpec, which: Case): Promise<Outcome> {
  await redis.flushall();
  await configureApp(redis, PREFIX, app.name, { dataPath: 'direct', fetchPatienceMs: TIMEOUT_S * 1000 });
  for (const n of ['n0', 'n2', 'n3', 'n4']) await alive(redis, n);
  const dir = join(work, which);
  const logs: string[] = [];
  const open: Array<{ close(): Promise<void> }> = [];
  const runner = async (task: string, node: string): Promise<TaskRunner> => {
    const r = await TaskRunner.start({
      app, task: app.tasks.find((t) => t.name === task)!, node, redisUrl: url, prefix: PREFIX,
      workDir: join(dir, `w-${task}-${node}`), dataDir: join(dir, 'stores', node), log: (m) => logs.push(`${task}@${node}: ${m}`),
    });
    open.push(r);
    return r;
  };
  const files = writeItems(join(dir, 'in'), K, 'r', (i) => `${i}r\n${BODY}\n`);
  const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
  open.push(await Sink.start({ app: app.name, redisUrl: url, prefix: PREFIX, outputDir: join(dir, 'out') }));
  const k = appKeys(PREFIX, app.name);
  try {
    const t0 = await runner('t0', 'n0');
    const t1 = await runner('t1', 'n0');
    let start = performance.now();
    if (which === 'normal') {
      await runner('t2', 'n2');
      await submitItems(redis, PREFIX, app, files, { runId: which });
    } else {
      await submitItems(redis, PREFIX, app, files, { runId: which });
      while (Number(await redis.hget(k.stats, 'processed:t1')) < K) await new Promise((r) => setTimeout(r, 20));
      // n0 is lost: its runners stop, its disk is gone, its heartbeat key expires.
      await Promise.all([t0.close(), t1.close()]);
      rmSync(join(dir, 'stores', 'n0'), { recursive: true, force: true });
      await redis.del(redisKeys(PREFIX).node('n0'));
      if (which === 'silent') {
        const silent = await silentEndpoint();
        open.push(silent);
        await redis.del(k.dataNodes('n0'));
        await redis.hset(k.dataNodes('n0'), silent.address, String(Date.now()));
      }
      start = performance.now();
      await Promise.all([runner('t0', 'n3'), runner('t1', 'n4'), runner('t2', 'n2')]);
    }
    let seconds: number | null = null;
    let delivered = 0;
    try {
      const res = await waitForItems(redis, PREFIX, app.name, items, { timeoutMs: TIMEOUT_S * 1000 });
      seconds = (performance.now() - start) / 1000;
      delivered = res.filter((r) => !r.failed).length;
    } catch {
      delivered = Number(await redis.hget(k.stats, 'delivered'));
    }
    const text = logs.join('\n');
    return { case: which, seconds, delivered, reruns: [...text.matchAll(/re-ran t1 for item/g)].length, askedAhead: /asked ahead/.test(text) };
  } finally {
    await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'jupiter-bench-recovery-'));
  const server = await new RedisServer({ dir: join(work, 'redis') }).start();
  const redis = connectRedis(server.url);
  try {
    const app = await loadApp(writeChainApp(work, 'rec', { tasks: 3, noExecProfile: true }));
    const out: Outcome[] = [];
    for (const c of ['normal', 'refused', 'silent'] as const) {
      process.stdout.write(`${c}: ${K} items ... `);
      const o = await runCase(redis, server.url, work, app, c);
      console.log(o.seconds === null ? `not done within ${TIMEOUT_S} s (${o.delivered} delivered)` : `${o.seconds.toFixed(2)} s, ${o.reruns} re-runs`);
      out.push(o);
    }
    const base = out[0]!.seconds ?? NaN;
    console.log(renderTable(['case', 'items', 'seconds', 'x normal', 're-runs of t1', 'asked ahead'], out.map((o) => [
      o.case, String(K), o.seconds === null ? `> ${TIMEOUT_S}` : o.seconds.toFixed(2), o.seconds === null ? '-' : (o.seconds / base).toFixed(1), String(o.reruns), o.askedAhead ? 'yes' : 'no',
    ])));
    mkdirSync(dirname(RESULTS), { recursive: true });
    writeFileSync(RESULTS, `${JSON.stringify({ bench: 'recovery', at: new Date().toISOString(), items: K, cpus: cpus().length, loadavg: loadavg(), cases: out }, null, 2)}\n`);
    console.log(`results: ${RESULTS}`);
  } finally {
    redis.disconnect();
    await server.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
