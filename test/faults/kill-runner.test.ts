// Fault 1: kill -9 a task's runner in the middle of a 400-item stream, with the process runtime
// (its supervisor restarts it) and with the docker runtime (the node process inside the container
// is killed; the container's on-failure restart policy brings it back). The jobs the runner held
// go back to the queue as its replacement starts (not when their 30 s locks expire: the default
// lock is kept here), and the sink delivers every output exactly once.
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { appKeys, configureApp, connectRedis, ProcessRuntime, Sink, submitItems, waitForItems } from '../../circe/index.js';
import { bullKey } from '../../circe/queue/keys.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import { dockerCluster } from '../docker/fixture.js';
import { countDeliveries, pidAlive, printCounts, until, writeChainApp, writeItems, type DeliveryCount } from '../support/faults.js';

const N = 400;

/**
 * Submit N items, kill the victim once some are delivered, wait for all, count. The victim, t1,
 * takes 2 ms an item, so that a backlog usually waits for it; it is killed while it holds jobs.
 */
async function streamWithKill(redis: Redis, prefix: string, app: AppSpec, work: string, outDir: string, tag: string, kill: () => Promise<void>): Promise<{ c: DeliveryCount; atKill: number; ms: number }> {
  const files = writeItems(join(work, 'in'), N, tag);
  const t0 = Date.now();
  const submitted = submitItems(redis, prefix, app, files, { runId: 'r' });
  const delivered = async (): Promise<number> => Number(await redis.hget(`${prefix}app:${app.name}:stats`, 'delivered'));
  const atKill = await until(async () => {
    const d = await delivered();
    return d >= 100 ? d : undefined;
  }, 90_000, 'the first deliveries');
  await kill();
  const items = (await submitted).map((i) => i.item);
  await waitForItems(redis, prefix, app.name, items, { timeoutMs: 120_000 });
  const ms = Date.now() - t0;
  const c = await countDeliveries(redis, prefix, app.name, outDir, items.map((i) => `${i}_t2.txt`));
  return { c, atKill, ms };
}

/**
 * Kill the runner (pid) while its queue's active list holds a job, and return how many jobs the
 * dead runner held, read before it is restarted (on a loaded machine t1 can be waiting for t0 now
 * and then; its replacement only reports taking jobs back when there were some).
 */
async function killWhileHolding(redis: Redis, activeKey: string, pid: number): Promise<number> {
  await until(async () => ((await redis.llen(activeKey)) > 0 ? true : undefined), 30_000, 't1 holding a job', 1);
  process.kill(pid, 'SIGKILL');
  await until(() => (pidAlive(pid) ? undefined : true), 5_000, 'the killed runner gone', 1);
  return redis.llen(activeKey);
}

function checkCounts(c: DeliveryCount, outDir: string, tag: string): void {
  printCounts(c);
  expect(c.missing).to.deep.equal([]);
  expect(c.lost).to.equal(0);
  expect(c.extraFiles).to.equal(0);
  expect(c.sinkDelivered).to.equal(N);
  expect(readFileSync(join(outDir, `17${tag}_t2.txt`), 'utf8')).to.equal(`17${tag}\nt0\nt1\nt2\n`);
}

describe('fault: kill -9 a task runner mid-stream (400 items)', function () {
  this.timeout(240_000);
  let redis: TestRedis;
  let client: Redis;
  let work: string;

  before(async () => {
    redis = await startTestRedis();
    client = connectRedis(redis.url);
    work = mkdtempSync(join(tmpdir(), 'jupiter-kill-'));
  });
  after(async () => {
    client?.disconnect();
    await redis?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('process runtime: the supervisor restarts the runner; every item is delivered exactly once', async () => {
    const app = await loadApp(writeChainApp(join(work, 'p'), 'killproc', { tasks: 3, sleepOf: { 1: 2 } }));
    const cluster = { stateDir: join(work, 'p', '.jupiter') } as ClusterConfig;
    const runtime = new ProcessRuntime({ runsDir: join(work, 'p', 'runs'), stopGraceSec: 5 });
    const prefix = 'kp:';
    await configureApp(client, prefix, app.name, { backoffMs: 100 });
    const specs: RunnerSpec[] = [...app.dagTasks, 'home'].map((task) => ({ app: app.name, task, node: task === 'home' ? 'home' : 'node1', runId: 'r', redisUrl: redis.url, redisPrefix: prefix }));
    try {
      await runtime.prepare(app, cluster);
      await runtime.start(app, specs, cluster);
      const outDir = join(work, 'p', 'runs', app.name, 'r', 'output');
      let victim = 0;
      let held = 0;
      const active = bullKey(appKeys(prefix, app.name), 't1', 'active');
      const { c, atKill, ms } = await streamWithKill(client, prefix, app, join(work, 'p'), outDir, 'k', async () => {
        victim = Number((await runtime.list(app.name, cluster)).find((h) => h.task === 't1')!.id);
        // Its supervisor restarts it 200 ms after its death at the earliest.
        held = await killWhileHolding(client, active, victim);
        await until(async () => {
          const h = (await runtime.list(app.name, cluster)).find((x) => x.task === 't1');
          return h && Number(h.id) !== victim && pidAlive(Number(h.id));
        }, 15_000, 'runner t1 restarted');
      });
      console.log(`      killed runner t1 (pid ${victim}) holding ${held} job(s) after ${atKill} deliveries; ${N} items in ${(ms / 1000).toFixed(1)} s`);
      checkCounts(c, outDir, 'k');
      const log = await runtime.logs(app.name, 't1', cluster);
      expect(log).to.match(/died \(SIGKILL\); restart #1/);
      // held is 0 only when its last job finished in the instant before the kill landed.
      if (held > 0) expect(log).to.match(/took back \d+ job\(s\) held by a previous runner of t1/);
    } finally {
      await runtime.teardown(app.name, cluster);
    }
  });

  describe('docker runtime (real dockerd)', function () {
    let engine: TestDockerd | undefined;
    let app: AppSpec;
    let cluster: ClusterConfig;
    const rt = new DockerRuntime();

    before(async function () {
      engine = await startDockerdOrSkip(this);
    });
    after(async () => {
      if (cluster) await rt.teardown(app.name, cluster).catch(() => undefined);
      await engine?.stop();
    });

    it('the container restarts after its runner is killed; every item is delivered exactly once', async () => {
      app = await loadApp(writeChainApp(join(work, 'd'), 'killdock', { tasks: 3, sleepOf: { 1: 2 } }));
      cluster = dockerCluster([{ name: 'node1', endpoint: engine!.endpoint }]);
      cluster.redisUrl = redis.url;
      const prefix = cluster.redisPrefix;
      await configureApp(client, prefix, app.name, { backoffMs: 100 });
      const t0 = Date.now();
      await rt.prepare(app, cluster);
      const prepMs = Date.now() - t0;
      await rt.start(app, app.dagTasks.map((task) => ({ app: app.name, task, node: 'node1', runId: 'r', redisUrl: redis.url, redisPrefix: prefix })), cluster);
      const outDir = join(work, 'd', 'out');
      const sink = await Sink.start({ app: app.name, redisUrl: redis.url, prefix, outputDir: outDir });
      try {
        await until(async () => (await client.hlen(`${prefix}app:${app.name}:ready`)) >= app.dagTasks.length, 60_000, 'the containers to consume');
        const container = engine!.docker.getContainer((await rt.list(app.name, cluster)).find((h) => h.task === 't1')!.id);
        let victim = 0;
        let held = 0;
        const { c, atKill, ms } = await streamWithKill(client, prefix, app, join(work, 'd'), outDir, 'd', async () => {
          // With Init, the container's pid 1 is docker-init; the runner (node) is its child.
          const initPid = (await container.inspect()).State.Pid;
          victim = Number(readFileSync(`/proc/${initPid}/task/${initPid}/children`, 'utf8').trim().split(/\s+/)[0]);
          expect(readFileSync(`/proc/${victim}/cmdline`, 'utf8')).to.include('runner/main.js');
          held = await killWhileHolding(client, bullKey(appKeys(prefix, app.name), 't1', 'active'), victim);
          await until(async () => {
            const st = await container.inspect();
            return st.RestartCount >= 1 && st.State.Running;
          }, 30_000, 'the container to restart');
        });
        const st = await container.inspect();
        console.log(`      images ready in ${(prepMs / 1000).toFixed(1)} s; killed runner t1 (host pid ${victim}) holding ${held} job(s) after ${atKill} deliveries; container restarted ${st.RestartCount}x; ${N} items in ${(ms / 1000).toFixed(1)} s`);
        checkCounts(c, outDir, 'd');
        expect(st.RestartCount).to.equal(1);
        const log = await rt.logs(app.name, 't1', cluster);
        if (held > 0) expect(log, log).to.match(/took back \d+ job\(s\) held by a previous runner of t1/);
      } finally {
        await sink.close();
      }
    });
  });
});
