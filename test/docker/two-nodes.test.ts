// Two dockerd instances stand for two nodes: the docker runtime builds the app image on each
// engine, starts every task's container on the engine of its mapped node, items of the example
// app `dummy` (joins, both FLAG modes) flow end to end through a real Redis reached via host
// networking, and teardown removes everything from both engines.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdsOrSkip } from '../support/docker-suite.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { appsDir } from '../support/paths.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import { Sink } from '../../circe/home/sink.js';
import { submitItems } from '../../circe/home/source.js';
import { waitForItems } from '../../circe/home/wait.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { dockerCluster, specsFor } from './fixture.js';

describe('docker runtime: two engines as two nodes, items end to end (real dockerd, real Redis)', function () {
  this.timeout(240_000);
  let a: TestDockerd | undefined;
  let b: TestDockerd | undefined;
  let redis: TestRedis | undefined;
  let client: Redis | undefined;
  let sink: Sink | undefined;
  let app: AppSpec;
  let cluster: ClusterConfig;
  const rt = new DockerRuntime();
  const outDir = mkdtempSync(join(tmpdir(), 'jupiter-docker-out-'));
  const prefix = 'jupitertest:';

  before(async function () {
    [a, b] = await startDockerdsOrSkip(this, [{}, { useExisting: false }]);
    redis = await startTestRedis();
    client = connectRedis(redis.url);
    app = await loadApp(join(appsDir, 'dummy'));
    cluster = dockerCluster([{ name: 'node1', endpoint: (a as TestDockerd).endpoint }, { name: 'node2', endpoint: (b as TestDockerd).endpoint }]);
    cluster.redisUrl = redis.url;
  });

  after(async () => {
    if (cluster) await rt.teardown(app.name, cluster).catch(() => undefined);
    await sink?.close();
    client?.disconnect();
    await redis?.stop();
    await Promise.all([a?.stop(), b?.stop()]);
    rmSync(outDir, { recursive: true, force: true });
  });

  const mapping = (): Record<string, string> => Object.fromEntries(app.dagTasks.map((t, i) => [t, i % 2 ? 'node2' : 'node1']));

  it('builds the app image on both engines and starts each task on the engine of its mapped node', async () => {
    const progress: string[] = [];
    let t0 = Date.now();
    await rt.prepare(app, cluster, (m) => progress.push(m));
    const prepareMs = Date.now() - t0;
    expect(progress.some((m) => m.startsWith('node1: ')) && progress.some((m) => m.startsWith('node2: '))).to.equal(true);
    t0 = Date.now();
    const handles = await rt.start(app, specsFor(app, mapping(), (redis as TestRedis).url), cluster);
    console.log(`      prepare (base + deps + app image on 2 engines) ${prepareMs} ms; start ${handles.length} containers ${Date.now() - t0} ms`);
    for (const [engine, node] of [[a, 'node1'], [b, 'node2']] as const) {
      const infos = await (engine as TestDockerd).docker.listContainers({ all: true, filters: { label: [`jupiter.app=${app.name}`] } });
      const want = Object.entries(mapping()).filter(([, n]) => n === node).map(([t]) => t).sort();
      expect(infos.map((i) => i.Labels['jupiter.task']).sort(), node).to.deep.equal(want);
      expect(infos.every((i) => i.Labels['jupiter.node'] === node)).to.equal(true);
    }
    expect((await rt.list(app.name, cluster)).length).to.equal(app.dagTasks.length);
  });

  it('streams every sample input through the containers to the sink (joins and both FLAG modes)', async () => {
    sink = await Sink.start({ app: app.name, redisUrl: (redis as TestRedis).url, prefix, outputDir: outDir });
    const rounds = 3;
    const files = Array.from({ length: rounds }, () => app.sampleInputs).flat();
    const t0 = Date.now();
    const items = await submitItems(client as Redis, prefix, app, files, { runId: 'r1' });
    const results = await waitForItems(client as Redis, prefix, app.name, items.map((i) => i.item), { timeoutMs: 120_000 });
    const ms = Date.now() - t0;
    const failed = results.filter((r) => r.failed);
    if (failed.length) console.log(await rt.logs(app.name, 'task0', cluster, 30));
    expect(failed.map((r) => `${r.item}: ${r.error}`)).to.deep.equal([]);
    expect(results.every((r) => r.done && r.outputs.length > 0)).to.equal(true);
    const makespans = results.map((r) => r.makespanMs ?? 0).sort((x, y) => x - y);
    console.log(`      ${items.length} items through 7 tasks on 2 engines in ${ms} ms; makespan p50 ${makespans[Math.floor(makespans.length / 2)]} ms`);
    expect(readdirSync(outDir).length).to.be.greaterThan(0);
    const logs = await rt.logs(app.name, 'task6', cluster, 20);
    expect(logs).to.include('consuming queue task6');
    expect(logs).to.not.match(/redis:\/\/[^\s]*:[^*\s]+@/);
  });

  it('a task remapped to the other node moves there (its old container is removed)', async () => {
    const moved = { ...mapping(), task0: 'node2' };
    await rt.start(app, specsFor(app, moved, (redis as TestRedis).url), cluster);
    const onA = await (a as TestDockerd).docker.listContainers({ all: true, filters: { label: [`jupiter.app=${app.name}`, 'jupiter.task=task0'] } });
    const onB = await (b as TestDockerd).docker.listContainers({ all: true, filters: { label: [`jupiter.app=${app.name}`, 'jupiter.task=task0'] } });
    expect(onA).to.have.length(0);
    expect(onB.map((c) => c.Labels['jupiter.node'])).to.deep.equal(['node2']);
    await rt.start(app, specsFor(app, mapping(), (redis as TestRedis).url), cluster);
  });

  it('teardown removes the containers from both engines and reports each one', async () => {
    const report = await rt.teardown(app.name, cluster);
    expect(report.failed).to.deep.equal([]);
    expect(report.removed.filter((r) => r.startsWith('container'))).to.have.length(app.dagTasks.length);
    // Containers and images per engine; each node's data volume goes too (counted apart).
    const on = (d: unknown) => report.removed.filter((l) => l.includes((d as TestDockerd).socketPath) && !l.startsWith('volume'));
    expect(on(a)).to.have.length(4);
    expect(on(b)).to.have.length(3);
    for (const engine of [a, b]) {
      expect(await (engine as TestDockerd).docker.listContainers({ all: true, filters: { label: [`jupiter.app=${app.name}`] } })).to.deep.equal([]);
    }
  });
});
