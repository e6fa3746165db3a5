// End to end through the real CLI: `jupiter deploy <app> --wait` of every example app in a fresh
// working directory (the embedded stack: private redis-server, hub, 3 local agents, process
// runtime), then submit, status, logs and `teardown --stack`, checking outputs by content.
import { expect } from 'chai';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import mqtt from 'mqtt';
import { loadApp } from '../../config/app/load.js';
import { HOME, type AppSpec } from '../../config/types.js';
import { appsDir, fixturesDir } from '../support/paths.js';
import { anomalyExpected, expectedDummyOutputs, jobOf, reportSummary, type AnomalyReport } from './oracle.js';
import { isAlive } from '../../circe/runtime/pid.js';
import { parseDeployOutput, sleep, statusJson, WorkDir, type DeployOutput } from './workdir.js';
import { parsePrometheus, sampleValue } from '../dashboard/prom.js';

const NODES = ['node1', 'node2', 'node3'];

function timings(w: WorkDir): string {
  return w.calls.map((c) => `jupiter ${c.args.filter((a) => !a.startsWith('/')).join(' ')}: ${(c.ms / 1000).toFixed(1)} s`).join('; ');
}

/** Checks shared by both apps: the deploy printed a placement of every task and a dashboard URL. */
async function checkDeployPrinted(app: AppSpec, out: DeployOutput, w: WorkDir): Promise<void> {
  expect(Object.keys(out.placement).sort()).to.deep.equal([...app.dagTasks].sort());
  for (const node of Object.values(out.placement)) expect(NODES).to.include(node);
  const st = await statusJson(w, app.name);
  expect(st.mapping.mapping).to.deep.equal(out.placement);
  expect(out.dashboardUrl).to.match(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/\\?app=${app.name}$`));
  const page = await fetch(out.dashboardUrl!);
  expect(page.status).to.equal(200);
  expect(await page.text()).to.include('Jupiter dashboard');
}

/** teardown --stack: what it reports, and that no process of the deployment or stack remains. */
async function checkTeardown(app: AppSpec, w: WorkDir): Promise<void> {
  const states = w.runnerStates(app.name);
  expect(states.map((s) => s.task).sort()).to.deep.equal([...app.dagTasks, HOME].sort());
  const pids = [...w.stackPids(), ...states.flatMap((s) => [s.supervisorPid, s.runnerPid!])];
  expect(pids.filter((p) => !isAlive(p)), 'processes dead before teardown').to.deep.equal([]);
  const python = w.pythonWorkerPids(app.name);
  const r = await w.expectCli(['teardown', app.name, '--stack']);
  for (const s of states) expect(r.stdout).to.include(`removed process runner ${s.task}@${s.node} (pid ${s.runnerPid}`);
  expect(r.stdout).to.match(new RegExp(`removed \\d+ Redis key\\(s\\) of ${app.name}`));
  expect(r.stdout).to.match(/stopped redis-server \(pid \d+\)/);
  expect(r.stdout).to.match(/stopped hub \(pid \d+\)/);
  expect(r.stdout.match(/stopped agent node\d \(pid \d+\)/g)).to.have.length(NODES.length);
  expect(pids.filter(isAlive), 'processes still running after teardown --stack').to.deep.equal([]);
  expect(python.filter(isAlive), 'python workers still running').to.deep.equal([]);
  expect(w.runnerStates(app.name)).to.deep.equal([]);
  expect(w.stack()).to.deep.equal({});
  // Nothing left to talk to: status says so (runtime failure, exit 1).
  const after = await w.cli(['status', app.name]);
  expect(after.code).to.equal(1);
  expect(after.stderr).to.match(/no Jupiter stack is running/);
}

describe('e2e: jupiter deploy dummy (Python, joins, both FLAG modes)', function () {
  this.timeout(120_000);
  let w: WorkDir;
  let app: AppSpec;
  let out: DeployOutput;
  const expected = new Map<string, ReturnType<typeof expectedDummyOutputs> extends Map<string, infer R> ? R : never>();

  function checkOutputs(dir: string): void {
    const got = readdirSync(dir).sort();
    expect(got).to.deep.equal([...expected.keys()].sort());
    for (const [name, rec] of expected) {
      expect(JSON.parse(readFileSync(join(dir, name), 'utf8')), name).to.deep.equal(rec);
    }
  }

  before(async () => {
    w = new WorkDir();
    app = await loadApp(join(appsDir, 'dummy'));
    const r = await w.expectCli(['deploy', 'dummy', '--wait'], 0, 110_000);
    out = parseDeployOutput(r.stdout);
    for (const f of app.sampleInputs) for (const [n, rec] of expectedDummyOutputs(app, f)) expected.set(n, rec);
  });

  after(async () => {
    if (w) console.log(`      timings: ${timings(w)}`);
    await w?.dispose(['dummy']);
  });

  it('prints a placement of every task on the local nodes and the dashboard URL', async () => {
    await checkDeployPrinted(app, out, w);
  });

  it('delivers, for every sample input, the outputs the DAG implies (joins, FLAG true and false by lineage)', () => {
    // The lineage of task6 shows task4 joined task1+task2, task5 joined task1+task3 (task1 is
    // FLAG true: one output to both), task6 joined task2+task4+task5 (task2 is FLAG false: its
    // 2nd output went to its 2nd child); each task refuses inputs addressed to another.
    expect(out.outputDir.startsWith(join(w.dir, 'runs', 'dummy'))).to.equal(true);
    expect(expected.size).to.equal(app.sampleInputs.length);
    checkOutputs(out.outputDir);
    expect(out.items.map((i) => i.item).sort()).to.deep.equal(app.sampleInputs.map((f) => jobOf(f)).sort());
    for (const i of out.items) {
      expect(i.state).to.equal('done');
      expect(i.makespanMs).to.be.greaterThan(0);
    }
  });

  it('records a makespan per item and the per-task counts', async () => {
    const st = await statusJson(w, 'dummy');
    const n = app.sampleInputs.length;
    expect(st.status.makespan.count).to.equal(n);
    expect(st.status.makespan.p50Ms).to.be.greaterThan(0);
    expect(st.status.items).to.deep.equal({ submitted: n, done: n, inFlight: 0 });
    for (const t of st.status.tasks) expect(t, t.task).to.include({ processed: n, failed: 0, waiting: 0, active: 0 });
    expect(st.status.sink.delivered).to.equal(expected.size);
    expect(st.status.deadLetterCount).to.equal(0);
  });

  it('publishes over the hub\'s embedded broker and counts in /metrics what `jupiter status` counts', async () => {
    const st = await statusJson(w, 'dummy');
    const hub = w.stack().hub!;
    // the browser gets no broker address or credential: the dashboard relays telemetry itself
    const cfg = await (await fetch(new URL('/config.json', hub.httpUrl))).json() as Record<string, unknown>;
    expect(cfg).not.to.have.property('broker');
    // a client of the embedded aedes broker gets the retained mapping and every task's last event
    // (with the stack's generated login: the embedded broker refuses anonymous clients, see stack-mqtt-login.test.ts)
    const client = await mqtt.connectAsync(hub.mqttUrl, { reconnectPeriod: 0, connectTimeout: 5000, username: hub.mqttUsername, password: hub.mqttPassword });
    const got = new Map<string, Record<string, unknown>>();
    client.on('message', (topic, payload) => got.set(topic, JSON.parse(payload.toString()) as Record<string, unknown>));
    try {
      await client.subscribeAsync(['jupiter/dummy/mapping', 'jupiter/dummy/tasks/+']);
      for (let i = 0; i < 100 && got.size < 1 + app.dagTasks.length; i++) await sleep(50);
    } finally {
      await client.endAsync();
    }
    expect(got.get('jupiter/dummy/mapping')?.mapping).to.deep.equal(st.mapping.mapping);
    for (const t of app.dagTasks) expect(got.get(`jupiter/dummy/tasks/${t}`), t).to.include({ task: t, node: st.mapping.mapping[t], event: 'finish' });
    // /metrics (the bridge reads the event stream continuously; give it a moment)
    let samples = parsePrometheus(await (await fetch(new URL('/metrics', hub.httpUrl))).text());
    for (let i = 0; i < 50 && sampleValue(samples, 'jupiter_items_done_total', { app: 'dummy' }) !== st.status.items.done; i++) {
      await sleep(100);
      samples = parsePrometheus(await (await fetch(new URL('/metrics', hub.httpUrl))).text());
    }
    expect(sampleValue(samples, 'jupiter_items_done_total', { app: 'dummy' })).to.equal(st.status.items.done);
    expect(sampleValue(samples, 'jupiter_items_done_total', { app: 'dummy' })).to.equal(st.status.sink.delivered);
    for (const t of st.status.tasks) {
      expect(sampleValue(samples, 'jupiter_items_processed_total', { app: 'dummy', task: t.task, node: st.mapping.mapping[t.task]! }), t.task).to.equal(t.processed);
      expect(sampleValue(samples, 'jupiter_queue_depth', { app: 'dummy', task: t.task, state: 'waiting' }), t.task).to.equal(0);
    }
  });

  it('streams more items with `jupiter submit --wait`', async () => {
    const dir = join(w.dir, 'more');
    mkdirSync(dir);
    const files = [5, 6, 7].map((i) => {
      const f = join(dir, `${i}botnet.ipsum`);
      writeFileSync(f, `more input ${i} ${randomBytes(64 * i).toString('hex')}\n`);
      return f;
    });
    const r = await w.expectCli(['submit', 'dummy', ...files, '--wait']);
    expect(r.stdout).to.match(/^5botnet\t5botnet\.ipsum$/m);
    expect(r.stdout).to.include(`outputs: ${out.outputDir}`);
    for (const f of files) for (const [n, rec] of expectedDummyOutputs(app, f)) expected.set(n, rec);
    checkOutputs(out.outputDir);
    const st = await statusJson(w, 'dummy');
    expect(st.status.makespan.count).to.equal(app.sampleInputs.length + files.length);
    expect(st.status.items.done).to.equal(app.sampleInputs.length + files.length);
  });

  it('prints a task\'s log lines with `jupiter logs`', async () => {
    const r = await w.expectCli(['logs', 'dummy', 'task4']);
    const lines = r.stdout.trim().split('\n');
    expect(lines.length).to.be.greaterThan(0);
    expect(r.stdout).to.include(`dummy/task4@${out.placement.task4}: consuming queue task4`);
    const home = await w.expectCli(['logs', 'dummy', HOME]);
    expect(home.stdout).to.include(`sink writing to ${out.outputDir}`);
    const none = await w.cli(['logs', 'dummy', 'no-such-task']);
    expect(none.code).to.equal(2);
  });

  it('refuses a bad app or runtime with exit 2 and leaves the running deployment alone', async () => {
    const bad = await w.cli(['deploy', join(fixturesDir, 'bad-apps', 'cycle')]);
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/configuration\.txt:\d+/);
    const badRuntime = await w.cli(['deploy', 'dummy', '--runtime', 'bogus']);
    expect(badRuntime.code).to.equal(2);
    expect(badRuntime.stderr).to.include('unknown runtime');
    const all = JSON.parse((await w.expectCli(['status', '--json'])).stdout) as Array<{ deployment: { app: string; runId: string } }>;
    expect(all.map((a) => a.deployment.app)).to.deep.equal(['dummy']);
    expect(w.apps()).to.deep.equal(['dummy']);
    // still the same deployment, still serving
    expect(all[0]!.deployment.runId).to.equal((await statusJson(w, 'dummy')).deployment.runId);
    expect(w.runnerStates('dummy').every((s) => isAlive(s.runnerPid))).to.equal(true);
  });

  it('`teardown --stack` reports removed runners and keys and leaves no process running', async () => {
    await checkTeardown(app, w);
  });
});

describe('e2e: jupiter deploy anomaly (JavaScript)', function () {
  this.timeout(120_000);
  let w: WorkDir;
  let app: AppSpec;
  let out: DeployOutput;
  const expected = anomalyExpected(join(appsDir, 'anomaly'));

  function checkReport(dir: string, job: string, like: string): void {
    const file = join(dir, `${job}_fusion_report.json`);
    expect(existsSync(file), file).to.equal(true);
    const rep = JSON.parse(readFileSync(file, 'utf8')) as AnomalyReport;
    expect(rep.job).to.equal(job);
    expect(rep.shards).to.deep.equal([0, 1, 2]);
    const want = expected[like]!;
    const findings = want.anomalies.map((a) => `${a.type} from ${a.src_ip}`).sort();
    expect(reportSummary(rep), job).to.deep.equal({ flows: want.flows, verdict: findings.length ? 'anomalous' : 'clean', findings });
    expect(rep.verdict).to.equal(findings.length ? 'anomalous' : 'clean');
  }

  before(async () => {
    w = new WorkDir();
    app = await loadApp(join(appsDir, 'anomaly'));
  });

  after(async () => {
    if (w) console.log(`      timings: ${timings(w)}`);
    await w?.dispose(['anomaly']);
  });

  it('refuses a bad app with exit 2 before starting anything', async () => {
    const r = await w.cli(['deploy', join(fixturesDir, 'bad-apps', 'duplicate-task')]);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/configuration\.txt:\d+/);
    expect(w.stackPids()).to.deep.equal([]);
    expect(w.apps()).to.deep.equal([]);
  });

  it('deploys with --wait: placement, dashboard URL, one report per input as expected.json says', async () => {
    const r = await w.expectCli(['deploy', 'anomaly', '--wait'], 0, 110_000);
    out = parseDeployOutput(r.stdout);
    await checkDeployPrinted(app, out, w);
    const jobs = app.sampleInputs.map((f) => jobOf(f));
    expect(jobs.sort()).to.deep.equal(Object.keys(expected).sort());
    expect(readdirSync(out.outputDir).sort()).to.deep.equal(jobs.map((j) => `${j}_fusion_report.json`).sort());
    for (const j of jobs) checkReport(out.outputDir, j, j);
    const st = await statusJson(w, 'anomaly');
    expect(st.status.makespan.count).to.equal(jobs.length);
    expect(st.status.items).to.deep.equal({ submitted: jobs.length, done: jobs.length, inFlight: 0 });
    for (const t of st.status.tasks) expect(t, t.task).to.include({ processed: jobs.length, failed: 0 });
  });

  it('streams more items with `jupiter submit --wait`', async () => {
    const dir = join(w.dir, 'more');
    mkdirSync(dir);
    // the same flows under new job ids: the reports must say the same
    const pairs = [['1flows', '31flows'], ['5flows', '35flows']] as const;
    const files = pairs.map(([from, to]) => {
      const f = join(dir, `${to}.csv`);
      copyFileSync(join(appsDir, 'anomaly', 'sample_input', `${from}.csv`), f);
      return f;
    });
    await w.expectCli(['submit', 'anomaly', ...files, '--wait']);
    for (const [from, to] of pairs) checkReport(out.outputDir, to, from);
    expect((await statusJson(w, 'anomaly')).status.makespan.count).to.equal(app.sampleInputs.length + files.length);
  });

  it('prints a task\'s log lines with `jupiter logs`', async () => {
    const r = await w.expectCli(['logs', 'anomaly', 'fusion']);
    expect(r.stdout).to.include(`anomaly/fusion@${out.placement.fusion}: consuming queue fusion`);
  });

  it('`teardown --stack` reports removed runners and keys and leaves no process running', async () => {
    await checkTeardown(app, w);
  });
});
