// npm run bench:deploy — deploy and teardown of a 10-task app with the docker runtime on a real
// Docker engine (a private dockerd, as the tests start it). Target: deploy under 5 s once the
// base image exists. "deploy" = build the app's image through the engine API (prepare) + create
// and start the 10 containers; "ready" = until every runner consumes its queue; then one item
// crosses all 10 containers, and teardown removes them. Repeated BENCH_ROUNDS times (medians).
// Skipped with the reason printed when no engine can be started here (needs root and dockerd).
import { NOOP_TASK_SOURCE } from './noop-task.js';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { ensureBaseImage } from '../../circe/runtime/docker-base.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import { appKeys, connectRedis, Sink, submitItems, teardownAppKeys, waitForItems } from '../../circe/index.js';
import { dockerCluster } from '../../test/docker/fixture.js';
import { dockerdSkipReason, startTestDockerd, type TestDockerd } from '../../test/support/dockerd.js';

const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const TASKS = 10;
const PREFIX = 'benchdeploy:';
const here = dirname(fileURLToPath(import.meta.url));
const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2);
};
async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, Math.round(performance.now() - t0)];
}

/** A linear chain of 10 JavaScript pass-through tasks (t0 -> ... -> t9 -> home). */
function makeApp(root: string): string {
  const dir = join(root, 'chain10');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'));
  const names = Array.from({ length: TASKS }, (_, i) => `t${i}`);
  writeFileSync(join(dir, 'configuration.txt'), `${TASKS}\n${names.map((t, i) => `${t} 1 true ${names[i + 1] ?? 'home'}`).join('\n')}\n`);
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: Object.fromEntries(names.map((t) => [t, ['pass', true]])),
    exec_profiler: Object.fromEntries(names.map((t) => [t, true])),
  }));
  writeFileSync(join(dir, 'scripts', 'pass.mjs'), NOOP_TASK_SOURCE);
  writeFileSync(join(dir, 'sample_input', '1.txt'), 'hello\n');
  return dir;
}

interface Round {
  prepareMs: number;
  startMs: number;
  deployMs: number;
  readyMs: number;
  /** deploy + ready: what `jupiter deploy` waits for before it feeds inputs. */
  consumingMs: number;
  itemMs: number;
  teardownMs: number;
  removed: number;
}

async function main(): Promise<void> {
  const out = process.env.BENCH_RESULTS ?? join(here, '..', '..', '..', 'bench', 'results', 'deploy.json');
  const skip = (reason: string): void => {
    console.log(`bench:deploy skipped: ${reason}`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({ bench: 'deploy', at: new Date().toISOString(), skipped: reason }, null, 2)}\n`);
  };
  const reason = dockerdSkipReason();
  if (reason) return skip(reason);
  let engine: TestDockerd;
  try {
    log('starting a private dockerd ...');
    engine = await startTestDockerd();
  } catch (e) {
    return skip(`dockerd cannot start here: ${(e as Error).message.split('\n')[0]}`);
  }
  const root = mkdtempSync(join(tmpdir(), 'jupiter-bench-deploy-'));
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redis = connectRedis(server.url);
  const rt = new DockerRuntime();
  let app: AppSpec | undefined;
  let cluster: ClusterConfig | undefined;
  let sink: Sink | undefined;
  try {
    const [base, baseMs] = await timed(() => ensureBaseImage(engine.docker));
    log(`base image ${base.created ? 'created' : 'present'} in ${baseMs} ms`);
    app = await loadApp(makeApp(root));
    cluster = dockerCluster([{ name: 'node1', endpoint: engine.endpoint }], { cpus: 0.5, memoryMb: 256 });
    cluster.redisUrl = server.url;
    cluster.redisPrefix = PREFIX;
    const specs = app.dagTasks.map((task) => ({ app: app!.name, task, node: 'node1', runId: 'bench', redisUrl: server.url, redisPrefix: PREFIX }));
    const [, coldPrepareMs] = await timed(() => rt.prepare(app!, cluster!));
    log(`cold prepare (dependency and app layers) ${coldPrepareMs} ms`);
    sink = await Sink.start({ app: app.name, redisUrl: server.url, prefix: PREFIX, outputDir: join(root, 'out') });
    const k = appKeys(PREFIX, app.name);

    const rounds: Round[] = [];
    for (let r = 1; r <= ROUNDS; r++) {
      // The usual deploy: the app changed, so its own image layer is rebuilt.
      appendFileSync(join(app.dir, 'scripts', 'pass.mjs'), `// round ${r}\n`);
      await redis.del(k.ready);
      const [, prepareMs] = await timed(() => rt.prepare(app!, cluster!));
      const [handles, startMs] = await timed(() => rt.start(app!, specs, cluster!));
      if (handles.length !== TASKS) throw new Error(`started ${handles.length} containers, expected ${TASKS}`);
      const [, readyMs] = await timed(async () => {
        const deadline = Date.now() + 120_000;
        while ((await redis.hlen(k.ready)) < TASKS) {
          if (Date.now() > deadline) throw new Error('runners did not all start consuming within 120 s');
          await new Promise((res) => setTimeout(res, 20));
        }
      });
      const [, itemMs] = await timed(async () => {
        const items = await submitItems(redis, PREFIX, app!, app!.sampleInputs, { runId: 'bench' });
        const res = await waitForItems(redis, PREFIX, app!.name, items.map((i) => i.item), { timeoutMs: 60_000, pollMs: 10 });
        if (!res.every((x) => x.done && !x.failed && x.outputs.length === 1)) throw new Error(`item failed: ${JSON.stringify(res)}`);
      });
      const [report, teardownMs] = await timed(() => rt.teardown(app!.name, cluster!));
      const round = { prepareMs, startMs, deployMs: prepareMs + startMs, readyMs, consumingMs: prepareMs + startMs + readyMs, itemMs, teardownMs, removed: report.removed.length };
      rounds.push(round);
      log(`round ${r}/${ROUNDS}: ${JSON.stringify(round)}`);
    }
    const m = (key: keyof Round): number => median(rounds.map((x) => x[key]));
    const deploy = m('deployMs');
    console.log(`\nbench:deploy  (${TASKS}-task app, docker runtime, private dockerd ${engine.storageDriver}; medians of ${ROUNDS} rounds; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})`);
    console.log(`  base image                            ${baseMs} ms (${base.created ? 'created' : 'present'}; not part of deploy)`);
    console.log(`  prepare, cold (dependency + app layers) ${coldPrepareMs} ms`);
    console.log(`  prepare, app changed (app layer)      ${m('prepareMs')} ms`);
    console.log(`  start ${TASKS} containers                   ${m('startMs')} ms`);
    console.log(`  deploy = prepare + start              ${deploy} ms  (target < 5000 ms: ${deploy < 5000 ? 'met' : 'NOT met'})`);
    console.log(`  until every runner consumes its queue ${m('readyMs')} ms after start (deploy to consuming: ${m('consumingMs')} ms)`);
    console.log(`  one item through ${TASKS} containers      ${m('itemMs')} ms`);
    console.log(`  teardown (${TASKS} containers)             ${m('teardownMs')} ms`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({
      bench: 'deploy', at: new Date().toISOString(), tasks: TASKS, rounds: ROUNDS, cpus: cpus().length, loadavg: loadavg(), node: process.version,
      storageDriver: engine.storageDriver, baseImage: { ms: baseMs, created: base.created }, coldPrepareMs,
      median: { prepareMs: m('prepareMs'), startMs: m('startMs'), deployMs: deploy, readyMs: m('readyMs'), consumingMs: m('consumingMs'), itemMs: m('itemMs'), teardownMs: m('teardownMs') },
      perRound: rounds,
    }, null, 2)}\n`);
    log(`results: ${out}`);
  } finally {
    await sink?.close().catch(() => undefined);
    if (app && cluster) await rt.teardown(app.name, cluster).catch(() => undefined);
    if (app) await teardownAppKeys(redis, PREFIX, app.name).catch(() => undefined);
    await redis.quit().catch(() => undefined);
    await server.stop();
    await engine.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
