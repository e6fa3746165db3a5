// How long a 10-task app takes to deploy and tear down with the docker runtime once the base
// image exists (target: deploy under 5 s). Prints the numbers; no timing asserts (see README).
import { expect } from 'chai';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { ensureBaseImage } from '../../circe/runtime/docker-base.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import { Sink } from '../../circe/home/sink.js';
import { submitItems } from '../../circe/home/source.js';
import { waitForItems } from '../../circe/home/wait.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { chainApp, dockerCluster, specsFor } from './fixture.js';

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const v = await fn();
  return [v, Math.round(performance.now() - t0)];
}

describe('docker runtime: deploy and teardown timing of a 10-task app (real dockerd)', function () {
  this.timeout(240_000);
  let engine: TestDockerd | undefined;
  let redis: TestRedis | undefined;
  let client: Redis | undefined;
  let sink: Sink | undefined;
  let cleanupApp: (() => void) | undefined;
  const outDir = mkdtempSync(join(tmpdir(), 'jupiter-docker-out-'));

  before(async function () {
    engine = await startDockerdOrSkip(this, { seedImages: false });
    redis = await startTestRedis();
    client = connectRedis(redis.url);
  });

  after(async () => {
    await sink?.close();
    client?.disconnect();
    await redis?.stop();
    await engine?.stop();
    cleanupApp?.();
    rmSync(outDir, { recursive: true, force: true });
  });

  it('prepare + start + teardown of 10 python tasks, with items flowing through all of them', async () => {
    const e = engine as TestDockerd;
    const [base, baseMs] = await timed(() => ensureBaseImage(e.docker));
    const fixture = chainApp('chain10', 10);
    cleanupApp = fixture.cleanup;
    const app: AppSpec = await loadApp(fixture.app.dir);
    const cluster: ClusterConfig = dockerCluster([{ name: 'node1', endpoint: e.endpoint }], { cpus: 1, memoryMb: 256 });
    const rt = new DockerRuntime();
    const mapping = Object.fromEntries(app.dagTasks.map((t) => [t, 'node1']));
    const specs = specsFor(app, mapping, (redis as TestRedis).url);

    // Cold: the dependencies layer and the app layer are built.
    const [, coldPrepare] = await timed(() => rt.prepare(app, cluster));
    await rt.teardown(app.name, cluster);

    // A changed app: only its own layer is rebuilt (the usual deploy).
    appendFileSync(join(app.dir, 'scripts', 'task0.py'), '# changed\n');
    const [, prepareMs] = await timed(() => rt.prepare(app, cluster));
    const [handles, startMs] = await timed(() => rt.start(app, specs, cluster));
    expect(handles).to.have.length(10);

    const [, readyMs] = await timed(async () => {
      for (const t of app.dagTasks) {
        while (!(await rt.logs(app.name, t, cluster, 50)).includes('consuming queue')) await new Promise((r) => setTimeout(r, 100));
      }
    });
    sink = await Sink.start({ app: app.name, redisUrl: (redis as TestRedis).url, prefix: 'jupitertest:', outputDir: outDir });
    const [results, flowMs] = await timed(async () => {
      const items = await submitItems(client as Redis, 'jupitertest:', app, app.sampleInputs, { runId: 'r1' });
      return waitForItems(client as Redis, 'jupitertest:', app.name, items.map((i) => i.item), { timeoutMs: 120_000 });
    });
    expect(results.every((r) => r.done && !r.failed && r.outputs.length === 1)).to.equal(true);

    // Steady state: runners are up, an item crosses 10 containers.
    const [again, steadyMs] = await timed(async () => {
      const items = await submitItems(client as Redis, 'jupitertest:', app, app.sampleInputs, { runId: 'r1' });
      return waitForItems(client as Redis, 'jupitertest:', app.name, items.map((i) => i.item), { timeoutMs: 60_000 });
    });
    expect(again.every((r) => r.done && !r.failed)).to.equal(true);

    const [report, teardownMs] = await timed(() => rt.teardown(app.name, cluster));
    expect(report.removed.filter((r) => r.startsWith('container'))).to.have.length(10);

    // Unchanged app: everything cached.
    const [, warmPrepare] = await timed(() => rt.prepare(app, cluster));
    const [, warmStart] = await timed(() => rt.start(app, specs, cluster));
    const [, warmTeardown] = await timed(() => rt.teardown(app.name, cluster));

    const rows = [
      ['base image', base.created ? `${baseMs} ms (created)` : `${baseMs} ms (present)`],
      ['prepare, cold (deps + app layers)', `${coldPrepare} ms`],
      ['prepare, app changed (app layer)', `${prepareMs} ms`],
      ['start 10 containers', `${startMs} ms`],
      ['deploy = prepare + start (app changed)', `${prepareMs + startMs} ms`],
      ['all 10 runners consuming their queues, after start', `${readyMs} ms`],
      ['first item through 10 tasks', `${flowMs} ms`],
      ['next item through 10 tasks (runners up)', `${steadyMs} ms`],
      ['teardown (10 containers)', `${teardownMs} ms`],
      ['deploy, unchanged app (cached image)', `${warmPrepare + warmStart} ms`],
      ['teardown, unchanged app', `${warmTeardown} ms`],
    ];
    console.log(rows.map(([k, v]) => `      ${(k as string).padEnd(50)} ${v}`).join('\n'));
  });
});
