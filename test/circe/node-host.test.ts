// The process runtime's node hosts: the Python tasks of one app on one node share a Node process,
// and a task's failure stays that task's. A generated chain of Python tasks on one node, against
// a real Redis: one task kills its own interpreter on CRASH items; the other items of every task
// arrive, the host keeps running, and the crashing items end as that task's dead letters. Then a
// task moves to another node (as the reconciler moves tasks): its old host lets it go and keeps
// the others, a new host takes it, and items still flow.
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { appKeys, configureApp, getStatus, ProcessRuntime, submitItems, waitForItems } from '../../circe/index.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import { until } from './support.js';

const PREFIX = 'jh:';

/** t0 -> t1 -> t2 -> home, Python; t1 ends its interpreter (os._exit) on items holding CRASH. */
function writePyChain(parent: string): string {
  const dir = join(parent, 'pychain');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  const names = ['t0', 't1', 't2'];
  writeFileSync(join(dir, 'configuration.txt'), `3\n${names.map((t, i) => `${t} 1 false ${names[i + 1] ?? 'home'}`).join('\n')}\n`);
  for (const t of names) {
    writeFileSync(join(dir, 'scripts', `${t}.py`), [
      'import os',
      'def task(filename, pathin, pathout):',
      '    body = open(os.path.join(pathin, filename)).read()',
      t === 't1' ? "    if 'CRASH' in body:\n        os._exit(3)" : '',
      `    out = os.path.join(pathout, filename.split('_')[0].split('.')[0] + '_${t}.txt')`,
      `    open(out, 'w').write(body + '${t}\\n')`,
      '    return [out]',
      '',
    ].filter(Boolean).join('\n'));
  }
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: Object.fromEntries(names.map((t) => [t, [t, true]])),
    exec_profiler: Object.fromEntries(names.map((t) => [t, true])),
  }));
  writeFileSync(join(dir, 'sample_input', '0s.txt'), 'sample\n');
  return dir;
}

describe('circe process runtime: node hosts (Python tasks of a node in one process)', function () {
  this.timeout(120_000);
  let cluster: ClusterConfig;
  let runtime: ProcessRuntime;
  let app: AppSpec | undefined;
  // One host for the node, whatever the cores (the default is one per core): this test is about
  // tasks sharing a process.
  const hostsBefore = process.env.JUPITER_NODE_HOSTS;
  before(() => {
    process.env.JUPITER_NODE_HOSTS = '1';
  });
  after(() => {
    if (hostsBefore === undefined) delete process.env.JUPITER_NODE_HOSTS;
    else process.env.JUPITER_NODE_HOSTS = hostsBefore;
  });
  const rig = circeSuite({
    workPrefix: 'jupiter-host-',
    afterEachTest: async () => {
      if (app) await runtime.teardown(app.name, cluster);
    },
  });

  const spec = (task: string, node: string): RunnerSpec => ({ app: app!.name, task, node, runId: 'h', redisUrl: rig.redis.url, redisPrefix: PREFIX });
  const items = (tag: string, n: number, crash: number[] = []): string[] => {
    const dir = join(rig.work, `in-${tag}`);
    mkdirSync(dir, { recursive: true });
    return Array.from({ length: n }, (_, i) => {
      const f = join(dir, `${i + 1}${tag}.txt`);
      writeFileSync(f, crash.includes(i + 1) ? 'CRASH\n' : `${i + 1}\n`);
      return f;
    });
  };

  it('a task that kills its interpreter loses only its own items; the host and the other tasks run on', async () => {
    cluster = { stateDir: join(rig.work, '.jupiter') } as ClusterConfig;
    runtime = new ProcessRuntime({ runsDir: join(rig.work, 'runs'), stopGraceSec: 10 });
    app = await loadApp(writePyChain(rig.work));
    await configureApp(rig.client, PREFIX, app.name, { lockMs: 3000, backoffMs: 50, attempts: 2 });
    const handles = await runtime.start(app, [spec('home', 'home'), ...app.dagTasks.map((t) => spec(t, 'node1'))], cluster);
    const hosted = handles.filter((h) => h.task !== 'home');
    // One process for the three tasks (the sink keeps its own).
    expect(new Set(hosted.map((h) => h.id)).size).to.equal(1);
    expect(hosted[0]!.id).to.not.equal(handles.find((h) => h.task === 'home')!.id);
    await until(async () => (await rig.client.hlen(appKeys(PREFIX, app!.name).ready)) === 4, 60_000, 'every runner ready');

    const sent = await submitItems(rig.client, PREFIX, app, items('a', 20, [5, 12]), { runId: 'h' });
    const res = await waitForItems(rig.client, PREFIX, app.name, sent.map((s) => s.item), { timeoutMs: 60_000 });
    const failed = res.filter((r) => r.failed).map((r) => r.item).sort();
    expect(failed).to.deep.equal(['12a', '5a']);
    expect(res.filter((r) => !r.failed && r.outputs.length === 1)).to.have.length(18);
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.deadLetters.map((d) => d.task)).to.deep.equal(['t1', 't1']);
    // The host never died: the same process still runs all three.
    const now = await runtime.list(app.name, cluster);
    expect(new Set(now.filter((h) => h.task !== 'home').map((h) => h.id))).to.deep.equal(new Set([hosted[0]!.id]));

    // t2 moves to node2: node1's host keeps t0 and t1 (same pid), a new host runs t2.
    const moved = await runtime.start(app, [spec('t2', 'node2')], cluster);
    expect(moved[0]!.id).to.not.equal(hosted[0]!.id);
    const after = await until(async () => {
      const l = await runtime.list(app!.name, cluster);
      return l.length === 4 && l.some((h) => h.task === 't2' && h.node === 'node2') ? l : undefined;
    }, 20_000, 't2 listed on node2 only');
    expect(after.filter((h) => h.node === 'node1').map((h) => h.id)).to.deep.equal([hosted[0]!.id, hosted[0]!.id]);
    await until(async () => (await rig.client.hget(appKeys(PREFIX, app!.name).ready, 't2'))?.includes('"node2"'), 30_000, 't2 ready on node2');
    const more = await submitItems(rig.client, PREFIX, app, items('b', 5), { runId: 'h' });
    const res2 = await waitForItems(rig.client, PREFIX, app.name, more.map((s) => s.item), { timeoutMs: 60_000 });
    expect(res2.every((r) => r.done && !r.failed && r.outputs.length === 1)).to.equal(true);

    const report = await runtime.teardown(app.name, cluster);
    expect(report.removed.filter((l) => l.startsWith('process runner '))).to.have.length(4);
    app = undefined;
    expect(await runtime.list('pychain', cluster)).to.deep.equal([]);
  });
});
