// Lineage on the direct data path (circe/dataplane/lineage.ts), with in-process runners on
// distinct nodes, real agents' heartbeat keys and a real Redis: a node is lost with outputs its
// receivers had not taken yet (two levels deep: the lost outputs were made from outputs kept on
// the same node); the tasks are moved as the reconciler moves them, the receivers find the
// producer dead, the invocations run again from the nearest surviving inputs (the source's
// bytes in Redis), and every item reaches the sink exactly once, with the right bytes. A node
// that is alive but lost a file (a store wiped) gets the same treatment.
import { expect } from 'chai';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { silentEndpoint } from '../support/silent-endpoint.js';
import { writeChainApp, writeItems } from '../support/faults.js';
import { loadApp } from '../../config/app/load.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { AppSpec } from '../../config/types.js';
import { heartbeat } from '../../profilers/agent/registry.js';
import { appKeys, configureApp, Sink, submitItems, TaskRunner, waitForItems } from '../../circe/index.js';

const PREFIX = 'jl:';
const N = 6;
const BODY = 'x'.repeat(8000); // over INLINE_MAX: every file between tasks stays on its node

describe('circe lineage: outputs lost with their node are made again (direct path, real Redis)', function () {
  this.timeout(90_000);
  const closables: Array<{ close(): Promise<void> }> = [];
  const rig = circeSuite({ workPrefix: 'jupiter-lineage-', flushEach: true, closeEach: () => closables.splice(0) });

  async function alive(node: string): Promise<void> {
    await heartbeat(rig.client, redisKeys(PREFIX), { node, host: '127.0.0.1', port: 1, pid: process.pid, startedAt: Date.now(), heartbeatAt: Date.now(), periodMs: 60_000, hostname: 'test' });
  }

  async function setUp(): Promise<{ app: AppSpec; runner: (task: string, node: string) => Promise<TaskRunner>; items: string[]; files: string[]; out: string; logs: string[] }> {
    const app = await loadApp(writeChainApp(rig.work, 'lin', { tasks: 3 }));
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000, dataPath: 'direct', fetchPatienceMs: 60_000 });
    const logs: string[] = [];
    const runner = async (task: string, node: string): Promise<TaskRunner> => TaskRunner.start({
      app, task: app.tasks.find((t) => t.name === task)!, node, redisUrl: rig.redis.url, prefix: PREFIX,
      workDir: join(rig.work, `w-${task}-${node}`), dataDir: join(rig.work, 'stores', node), log: (m) => logs.push(`${task}@${node}: ${m}`),
    });
    const files = writeItems(join(rig.work, 'in'), N, 'l', (i) => `${i}l\n${BODY}\n`);
    const out = join(rig.work, 'out');
    closables.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    return { app, runner, files, items: files.map((f) => f.split('/').pop()!.replace('.txt', '')), out, logs };
  }

  async function expectExactlyOnce(app: AppSpec, items: string[], out: string): Promise<void> {
    const res = await waitForItems(rig.client, PREFIX, app.name, items, { timeoutMs: 60_000 });
    expect(res.filter((r) => r.failed)).to.deep.equal([]);
    expect(readdirSync(out).sort()).to.deep.equal(items.map((i) => `${i}_t2.txt`).sort());
    for (const i of items) expect(readFileSync(join(out, `${i}_t2.txt`), 'utf8')).to.equal(`${i}\n${BODY}\nt0\nt1\nt2\n`);
    const k = appKeys(PREFIX, app.name);
    const stats = await rig.client.hgetall(k.stats);
    expect(Number(stats.delivered)).to.equal(items.length);
    expect(Object.keys(stats).filter((s) => s === 'dupSuppressed' || s.startsWith('dup:'))).to.deep.equal([]);
    // Every blob, lineage record and kept input is freed once the sink took the outputs.
    expect(await rig.client.keys(`${k.base}blob*`)).to.deep.equal([]);
  }

  /**
   * t0 and t1 on n0 run every item while t2 is not running yet, so t1's outputs (and, held for
   * them, t0's) wait on n0; then n0 is lost: its runners stop, its disk is gone, its agent's
   * heartbeat expires.
   */
  async function loseN0WithOutputs(s: Awaited<ReturnType<typeof setUp>>): Promise<void> {
    for (const n of ['n0', 'n2', 'n3', 'n4']) await alive(n);
    const t0 = await s.runner('t0', 'n0');
    const t1 = await s.runner('t1', 'n0');
    await submitItems(rig.client, PREFIX, s.app, s.files, { runId: 'lin' });
    const k = appKeys(PREFIX, s.app.name);
    for (let i = 0; i < 200 && Number(await rig.client.hget(k.stats, 'processed:t1')) < N; i++) await new Promise((r) => setTimeout(r, 50));
    expect(Number(await rig.client.hget(k.stats, 'processed:t1'))).to.equal(N);
    // t0's outputs were taken by t1, but are kept (lineage) while t1's outputs are wanted.
    expect(readdirSync(join(rig.work, 'stores', 'n0')).filter((f) => /^[0-9a-f]{40}$/.test(f))).to.have.length(2 * N);
    await Promise.all([t0.close(), t1.close()]);
    rmSync(join(rig.work, 'stores', 'n0'), { recursive: true, force: true });
    await rig.client.del(redisKeys(PREFIX).node('n0'));
  }

  it('a node lost with outputs nobody took (two levels kept there): re-run from the source\'s bytes, delivered exactly once', async () => {
    const set = await setUp();
    const { app, runner, items, out, logs } = set;
    await loseN0WithOutputs(set);
    const k = appKeys(PREFIX, app.name);
    // The reconciler moves t0 and t1 to surviving nodes; t2 starts on n2.
    closables.push(await runner('t0', 'n3'), await runner('t1', 'n4'), await runner('t2', 'n2'));

    await expectExactlyOnce(app, items, out);
    const text = logs.join('\n');
    expect(text).to.match(/t2@n2: blob \w+: node n0 is dead; asked its producer to run again/);
    // The first fetch that found n0 dead asked for the rest of t2's waiting deliveries at once.
    expect(text).to.match(/t2@n2: node n0 is dead: asked ahead for re-runs of \d+ blob\(s\) that deliveries waiting in t2 need/);
    expect(text).to.match(/t1@n4: blob \w+: node n0 is dead; asked its producer to run again/);
    expect(text).to.match(/t0@n3: re-ran t0 for item \d+l: 1 output\(s\) now kept on n3/);
    expect(text).to.match(/t1@n4: re-ran t1 for item \d+l: 1 output\(s\) now kept on n4/);
    // Each task counted one run per item: re-runs are not commits.
    expect(Number(await rig.client.hget(k.stats, 'processed:t0'))).to.equal(N);
    expect(Number(await rig.client.hget(k.stats, 'processed:t2'))).to.equal(N);
  });

  it('a node that answers nothing (the machine is gone, not just its processes): no attempt waits on it once it is known dead', async () => {
    const set = await setUp();
    const { app, runner, items, out, logs } = set;
    await loseN0WithOutputs(set);
    const k = appKeys(PREFIX, app.name);
    // n0's endpoint now takes connections and never answers: each attempt waits out its timeout.
    const silent = await silentEndpoint();
    closables.push(silent);
    await rig.client.del(k.dataNodes('n0'));
    await rig.client.hset(k.dataNodes('n0'), silent.address, String(Date.now()));
    const t = Date.now();
    closables.push(await runner('t0', 'n3'), await runner('t1', 'n4'), await runner('t2', 'n2'));
    await expectExactlyOnce(app, items, out).catch((e) => { console.log(logs.map((l) => l.slice(0, 160)).join('\n')); throw e; });
    // An attempt on the silent endpoint would wait 10 s: one per item (6, one after the other in
    // n0's lane) would take a minute. The first is ended once n0's heartbeat shows it dead (~1 s);
    // from then on fetches look where the blob is now (4 s in all here).
    console.log(`      ${N} items recovered in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    expect(logs.filter((l) => /^t2@n2: .*unreachable/.test(l)).length).to.be.at.most(1);
  });

  for (const how of ['refuses every connection', 'has no endpoint left'] as const) {
    it(`a live node where nothing serves any more (its runners killed: it ${how}): the producers run again after UNSERVED_MS, not after the fetch patience`, async () => {
      const set = await setUp();
      const { app, runner, items, out, logs } = set;
      await loseN0WithOutputs(set);
      await alive('n0'); // the node lives on (its agent beats); only its runners are gone, with their store
      const k = appKeys(PREFIX, app.name);
      if (how === 'refuses every connection') {
        // A killed runner's endpoint stays registered: a port nothing listens on any more.
        const closed = await silentEndpoint();
        await closed.close();
        await rig.client.hset(k.dataNodes('n0'), closed.address, String(Date.now()));
      }
      const t = Date.now();
      closables.push(await runner('t0', 'n3'), await runner('t1', 'n4'), await runner('t2', 'n2'));
      await expectExactlyOnce(app, items, out).catch((e) => { console.log(logs.map((l) => l.slice(0, 160)).join('\n')); throw e; });
      const secs = (Date.now() - t) / 1000;
      console.log(`      ${N} items recovered in ${secs.toFixed(1)} s`);
      const text = logs.join('\n');
      expect(text).to.match(/t2@n2: blob \w+: nothing on node n0 has served it for 10 s; asked its producer to run again/);
      // The rest of t2's waiting deliveries were asked for at once, not each after its own wait.
      expect(text).to.match(/t2@n2: nothing on node n0 serves: asked ahead for re-runs of \d+ blob\(s\)/);
      // One grace for the node, not one per item (6 × 10 s), and far from the patience (60 s here).
      expect(secs).to.be.below(40);
    });
  }

  it('a live node that lost a file (its store wiped) answers "not here": the producer runs again there', async () => {
    const { app, runner, items, files, out, logs } = await setUp();
    await alive('n0');
    const t0 = await runner('t0', 'n0');
    closables.push(t0);
    await submitItems(rig.client, PREFIX, app, files, { runId: 'lin' });
    const k = appKeys(PREFIX, app.name);
    for (let i = 0; i < 200 && Number(await rig.client.hget(k.stats, 'processed:t0')) < N; i++) await new Promise((r) => setTimeout(r, 50));
    const store = join(rig.work, 'stores', 'n0');
    for (const f of readdirSync(store)) rmSync(join(store, f), { force: true });
    closables.push(await runner('t1', 'n1'), await runner('t2', 'n2'));
    await expectExactlyOnce(app, items, out);
    expect(logs.join('\n')).to.match(/blob \w+: node n0 does not hold it; asked its producer to run again/);
  });
});
