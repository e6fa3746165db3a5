import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { appsDir } from '../support/paths.js';
import { fixtureAppDir, until } from './support.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import {
  configureApp, expectedOutputs, getStatus, ProcessRuntime, submitItems, teardownAppKeys, waitForItems,
} from '../../circe/index.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';

const PREFIX = 'jp:';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('circe process runtime (runner processes, real Redis)', function () {
  this.timeout(120_000);
  let cluster: ClusterConfig;
  let runtime: ProcessRuntime;
  const deployed: string[] = [];
  const rig = circeSuite({
    workPrefix: 'jupiter-proc-',
    afterEachTest: async () => {
      for (const a of deployed.splice(0)) await runtime.teardown(a, cluster);
    },
  });
  beforeEach(() => {
    cluster = { stateDir: join(rig.work, '.jupiter') } as ClusterConfig;
    runtime = new ProcessRuntime({ runsDir: join(rig.work, 'runs'), stopGraceSec: 10 });
  });

  async function deploy(app: AppSpec, runId: string): Promise<string> {
    await configureApp(rig.client, PREFIX, app.name, { lockMs: 3000, backoffMs: 100 });
    const specs: RunnerSpec[] = [...app.dagTasks, 'home'].map((task, i) => ({
      app: app.name, task, node: task === 'home' ? 'home' : `node${(i % 3) + 1}`, runId, redisUrl: rig.redis.url, redisPrefix: PREFIX,
    }));
    await runtime.prepare(app, cluster);
    deployed.push(app.name);
    const handles = await runtime.start(app, specs, cluster);
    expect(handles).to.have.length(specs.length);
    // idempotent: starting again returns the same runners
    const again = await runtime.start(app, specs, cluster);
    expect(again.map((h) => h.id)).to.deep.equal(handles.map((h) => h.id));
    return join(rig.work, 'runs', app.name, runId, 'output');
  }

  it('restarts a runner killed with -9 mid-stream; the sink delivers every item exactly once', async () => {
    const app = await loadApp(fixtureAppDir('jsline'));
    const out = await deploy(app, 'kill');
    const N = 300;
    const files = Array.from({ length: N }, (_, i) => {
      const p = join(rig.work, `${i + 1}i.txt`);
      writeFileSync(p, `item ${i + 1}\n`);
      return p;
    });
    const items = await submitItems(rig.client, PREFIX, app, files, { runId: 'kill' });
    await until(async () => (await getStatus(rig.client, PREFIX, app)).sink.delivered >= 30, 30_000, 'first deliveries');
    const before = (await runtime.list(app.name, cluster)).find((h) => h.task === 'b')!;
    process.kill(Number(before.id), 'SIGKILL');
    const after = await until(async () => {
      const h = (await runtime.list(app.name, cluster)).find((x) => x.task === 'b');
      return h && h.id !== before.id && alive(Number(h.id)) ? h : undefined;
    }, 15_000, 'runner b restarted');
    expect(after.id).to.not.equal(before.id);
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 90_000 });
    const st = await getStatus(rig.client, PREFIX, app);
    const delivered = res.filter((r) => r.outputs.length === 1 && !r.failed).length;
    const files2 = readdirSync(out);
    console.log(`      sent ${N}, delivered ${st.sink.delivered}, lost ${N - delivered}, duplicates suppressed ${st.sink.duplicatesSuppressed + st.tasks.reduce((a, t) => a + t.duplicates, 0)}`);
    expect(delivered).to.equal(N);
    expect(st.sink.delivered).to.equal(N);
    expect(files2).to.have.length(N);
    expect(readFileSync(join(out, '17i_c.txt'), 'utf8')).to.equal('item 17\na\nb\nc\n');
    const logs = await runtime.logs(app.name, 'b', cluster);
    expect(logs).to.match(/died \(SIGKILL\); restart #1/);
  });

  for (const name of ['dummy', 'anomaly']) {
    it(`runs the example app ${name} end to end`, async function () {
      if (!existsSync(join(appsDir, name, 'configuration.txt'))) this.skip();
      const app = await loadApp(join(appsDir, name));
      const out = await deploy(app, 'e2e');
      const items = await submitItems(rig.client, PREFIX, app, app.sampleInputs, { runId: 'e2e' });
      const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 90_000 });
      const st = await getStatus(rig.client, PREFIX, app);
      expect(st.deadLetters, JSON.stringify(st.deadLetters)).to.deep.equal([]);
      for (const r of res) {
        expect(r.failed).to.equal(false);
        expect(r.outputs.length).to.equal(expectedOutputs(app));
        expect(r.makespanMs).to.be.a('number');
      }
      expect(readdirSync(out).length).to.be.greaterThan(0);
      console.log(`      ${name}: ${res.length} items, ${st.sink.delivered} outputs, makespan p50 ${st.makespan.p50Ms} ms`);
    });
  }

  it('teardown stops every runner and its supervisor and reports them', async () => {
    const app = await loadApp(fixtureAppDir('jsline'));
    await deploy(app, 't');
    const handles = await runtime.list(app.name, cluster);
    expect(handles).to.have.length(4);
    const report = await runtime.teardown(app.name, cluster);
    deployed.splice(deployed.indexOf(app.name), 1);
    expect(report.removed).to.have.length(4);
    expect(report.removed[0]).to.match(/^process runner \w+@\w+ \(pid \d+, supervisor \d+\)$/);
    for (const h of handles) expect(alive(Number(h.id))).to.equal(false);
    expect(await runtime.list(app.name, cluster)).to.deep.equal([]);
    expect(await teardownAppKeys(rig.client, PREFIX, app.name)).to.be.greaterThan(0);
  });
});
