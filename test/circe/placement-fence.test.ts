// A runner its task was moved away from (while its node was out of reach) stops by itself:
// the fence on its own (real Redis), then through real runner processes of the process runtime —
// a runner process of its own (JavaScript tasks) and a task in a node host (Python tasks).
import { expect } from 'chai';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { fixtureAppDir, until } from './support.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { appKeys, configureApp, ProcessRuntime, submitItems, waitForItems } from '../../circe/index.js';
import { PlacementFence } from '../../circe/fence/placement-fence.js';
import { isAlive } from '../../circe/runtime/pid.js';

const PREFIX = 'jf:';

describe('placement fence (a runner its task moved away from stops)', function () {
  this.timeout(90_000);
  const rig = circeSuite({ workPrefix: 'jupiter-fence-', flushEach: true });

  /** A fence on task t of node n1 looking every 20 ms; the nodes it was told about. */
  function watch(): { fence: PlacementFence; moved: string[]; key: string } {
    const key = appKeys(PREFIX, 'app').placement;
    const moved: string[] = [];
    const fence = PlacementFence.start({ redis: rig.client, key, task: 't', node: 'n1', everyMs: 20, onMoved: (to) => moved.push(to) });
    return { fence, moved, key };
  }

  it('fires once when the placement changes from its node to another', async () => {
    await rig.client.hset(appKeys(PREFIX, 'app').placement, 't', 'n1', 'u', 'n1');
    const { fence, moved, key } = watch();
    await new Promise((r) => setTimeout(r, 100));
    expect(moved).to.deep.equal([]);
    await rig.client.hset(key, 't', 'n2');
    await until(async () => moved.length > 0, 2000, 'the fence to fire');
    await rig.client.hset(key, 't', 'n3');
    await new Promise((r) => setTimeout(r, 100));
    fence.stop();
    expect(moved).to.deep.equal(['n2']);
  });

  it('does not fire for a runner a relocation started before it wrote the new placement', async () => {
    // The new runner (n1) first sees the old node, then its own; a later move elsewhere counts.
    await rig.client.hset(appKeys(PREFIX, 'app').placement, 't', 'n0');
    const { fence, moved, key } = watch();
    await new Promise((r) => setTimeout(r, 100));
    await rig.client.hset(key, 't', 'n1');
    await new Promise((r) => setTimeout(r, 100));
    expect(moved).to.deep.equal([]);
    await rig.client.hset(key, 't', 'n4');
    await until(async () => moved.length > 0, 2000, 'the fence to fire');
    fence.stop();
    expect(moved).to.deep.equal(['n4']);
  });

  it('does not fire when the placement goes away (teardown) or never names the task', async () => {
    const key = appKeys(PREFIX, 'app').placement;
    await rig.client.hset(key, 't', 'n1');
    const { fence, moved } = watch();
    await new Promise((r) => setTimeout(r, 100));
    await rig.client.del(key);
    await new Promise((r) => setTimeout(r, 100));
    await rig.client.hset(key, 'u', 'n2');
    await new Promise((r) => setTimeout(r, 100));
    fence.stop();
    expect(moved).to.deep.equal([]);
  });

  describe('through runner processes (process runtime)', () => {
    let cluster: ClusterConfig;
    let runtime: ProcessRuntime;
    const deployed: AppSpec[] = [];
    afterEach(async () => {
      for (const a of deployed.splice(0)) await runtime.teardown(a.name, cluster);
    });

    /** Start the app's runners (task i on node<i % 3 + 1>) with its placement written; the mapping. */
    async function start(fixture: string): Promise<{ app: AppSpec; mapping: Record<string, string> }> {
      cluster = { stateDir: join(rig.work, '.jupiter'), redisPrefix: PREFIX } as ClusterConfig;
      runtime = new ProcessRuntime({ runsDir: join(rig.work, 'runs'), stopGraceSec: 10 });
      const app = await loadApp(fixtureAppDir(fixture));
      await configureApp(rig.client, PREFIX, app.name, { lockMs: 3000, backoffMs: 100 });
      const mapping = Object.fromEntries([...app.dagTasks.map((t, i) => [t, `node${(i % 3) + 1}`]), ['home', 'home']]) as Record<string, string>;
      await rig.client.hset(appKeys(PREFIX, app.name).placement, mapping);
      await runtime.prepare(app, cluster);
      deployed.push(app);
      await runtime.start(app, Object.entries(mapping).map(([task, node]) => ({ app: app.name, task, node, runId: 'r', redisUrl: rig.redis.url, redisPrefix: PREFIX })), cluster);
      // Each runner has looked at its placement once it announced itself (its fence starts first).
      await until(async () => (await rig.client.hlen(appKeys(PREFIX, app.name).ready)) === Object.keys(mapping).length, 30_000, 'the runners to be ready');
      await new Promise((r) => setTimeout(r, 200));
      return { app, mapping };
    }

    const taskLog = (app: string, task: string): Promise<string> => runtime.logs(app, task, cluster).catch(() => '');

    it('a runner process of its own exits and is not restarted; the others go on', async () => {
      const { app } = await start('jsline');
      const victim = app.dagTasks[1]!;
      const before = await runtime.list(app.name, cluster);
      const pid = Number(before.find((h) => h.task === victim)!.id);
      expect(isAlive(pid)).to.equal(true);
      await rig.client.hset(appKeys(PREFIX, app.name).placement, victim, 'elsewhere');
      await until(async () => !isAlive(pid), 15_000, `${victim}'s runner to stop`);
      await new Promise((r) => setTimeout(r, 1500));
      const after = await runtime.list(app.name, cluster);
      expect(after.map((h) => h.task).sort()).to.deep.equal(before.map((h) => h.task).filter((t) => t !== victim).sort());
      expect(await taskLog(app.name, victim)).to.match(/now runs on elsewhere/);
    });

    it('a task in a node host stops; the host and its other tasks go on', async () => {
      const { app, mapping } = await start('pyjoin');
      // Two Python tasks on one node share a host there: stop one of them.
      const byNode = new Map<string, string[]>();
      for (const t of app.dagTasks) byNode.set(mapping[t]!, [...(byNode.get(mapping[t]!) ?? []), t]);
      const [, tasks] = [...byNode].find(([, ts]) => ts.length > 1)!;
      const [victim, other] = tasks as [string, string];
      const hostPid = Number((await runtime.list(app.name, cluster)).find((h) => h.task === victim)!.id);
      await rig.client.hset(appKeys(PREFIX, app.name).placement, victim, 'elsewhere');
      await until(async () => /stopped/.test(await taskLog(app.name, victim)), 15_000, `${victim} to stop in its host`);
      expect(await taskLog(app.name, victim)).to.match(/now runs on elsewhere/);
      expect(isAlive(hostPid)).to.equal(true);
      expect(await taskLog(app.name, other)).to.not.match(/now runs on|stopped/);
      // The relocation that moved it: a runner on the new node, then the placement. Items stream
      // through the host's other tasks and the moved one.
      await runtime.start(app, [{ app: app.name, task: victim, node: 'node9', runId: 'r', redisUrl: rig.redis.url, redisPrefix: PREFIX }], cluster);
      await rig.client.hset(appKeys(PREFIX, app.name).placement, victim, 'node9');
      const items = await submitItems(rig.client, PREFIX, app, app.sampleInputs.slice(0, 1), { runId: 'r' });
      const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 60_000 });
      expect(res.every((r) => !r.failed)).to.equal(true);
    });
  });
});
