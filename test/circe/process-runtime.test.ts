import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { appsDir } from '../support/paths.js';
import { fixtureAppDir } from './support.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import {
  configureApp, expectedOutputs, getStatus, ProcessRuntime, submitItems, teardownAppKeys, waitForItems,
} from '../../circe/index.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import { defaultDataRoot } from '../../circe/dataplane/plane.js';
import { defaultWorkRoot } from '../../circe/runner/work-slots.js';
import { appStateDir } from '../../circe/runtime/process.js';
import { isAliveWith } from '../../circe/runtime/pid.js';
import { MALLOC_ENV } from '../../circe/runtime/malloc-env.js';

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
    cluster = { stateDir: join(rig.work, '.jupiter'), redisPrefix: PREFIX } as ClusterConfig;
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

  it('teardown stops every runner and its supervisor, removes the nodes\' data stores, and reports them', async () => {
    const app = await loadApp(fixtureAppDir('jsline'));
    await deploy(app, 't');
    const handles = await runtime.list(app.name, cluster);
    expect(handles).to.have.length(4);
    // Every runner keeps large buffers in its heap (circe/runtime/malloc-env.ts).
    for (const h of handles) expect(readFileSync(`/proc/${h.id}/environ`, 'utf8').split('\0')).to.include.members(Object.entries(MALLOC_ENV).map(([k, v]) => `${k}=${v}`));
    // A node's store of the direct data path, as its runners make it.
    const data = defaultDataRoot(defaultWorkRoot(), PREFIX, app.name);
    mkdirSync(join(data, 'n1'), { recursive: true });
    const report = await runtime.teardown(app.name, cluster);
    deployed.splice(deployed.indexOf(app.name), 1);
    console.log(`      teardown report:\n${report.removed.map((l) => `        ${l}`).join('\n')}`);
    const runners = report.removed.filter((l) => l.startsWith('process runner '));
    expect(runners).to.have.length(4);
    expect(runners[0]).to.match(/^process runner \w+@\w+ \(pid \d+, supervisor \d+\)$/);
    expect(report.removed[report.removed.length - 1]).to.equal(`data folder ${data}`);
    expect(existsSync(data)).to.equal(false);
    for (const h of handles) expect(alive(Number(h.id))).to.equal(false);
    expect(await runtime.list(app.name, cluster)).to.deep.equal([]);
    expect(await teardownAppKeys(rig.client, PREFIX, app.name)).to.be.greaterThan(0);
  });

  it('a recorded pid the kernel has given to another process is not signalled, listed or counted as running', async () => {
    // Two strangers hold the pids of a runner and its supervisor that died long ago (pids wrap:
    // pid_max is 32768 on many machines); the state file still names them.
    const strangers = [0, 1].map(() => spawn('sleep', ['60'], { stdio: 'ignore' }));
    try {
      const dir = appStateDir(cluster, 'gone');
      mkdirSync(dir, { recursive: true });
      const file = join(dir, 't0@node1.json');
      writeFileSync(file, JSON.stringify({ supervisorPid: strangers[0]!.pid, runnerPid: strangers[1]!.pid, task: 't0', node: 'node1', app: 'gone', restarts: 0, updatedAt: Date.now() }));
      expect(isAliveWith(strangers[0]!.pid, 'JUPITER_SUPERVISE_STATE', file)).to.equal(false);
      expect(await runtime.list('gone', cluster)).to.deep.equal([]);
      const report = await runtime.teardown('gone', cluster);
      expect(report.removed[0]).to.equal('process runner t0@node1 (pid -, supervisor 0)');
      for (const c of strangers) expect(alive(c.pid!), `stranger ${c.pid}`).to.equal(true);
      // The same check knows a process started for the file.
      const own = spawn('sleep', ['60'], { stdio: 'ignore', env: { ...process.env, JUPITER_SUPERVISE_STATE: file } });
      try {
        await new Promise((r) => own.once('spawn', r));
        expect(isAliveWith(own.pid, 'JUPITER_SUPERVISE_STATE', file)).to.equal(true);
      } finally {
        own.kill('SIGKILL');
      }
    } finally {
      for (const c of strangers) c.kill('SIGKILL');
    }
  });
});
