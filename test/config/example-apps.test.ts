// The example apps' tasks, run through a small in-test DAG walker (one job at a time, FLAG routing
// as CIRCE does it): the dummy app's lineage proves joins and FLAG routing; the anomaly app finds
// exactly the anomalies planted in its sample inputs; the camera app delivers exactly its
// expected.json and refuses a corrupted frame.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadApp } from '../../config/app/load.js';
import { jobPrefix } from '../../config/app/job.js';
import { HOME, type AppSpec, type TaskSpec } from '../../config/types.js';
import { appsDir } from '../support/paths.js';
import { pythonExecutable } from '../../circe/invoke/python.js';

type Invoke = (t: TaskSpec, inputs: string[], pathin: string, pathout: string) => Promise<string[]>;

const PY = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("t", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
names = json.loads(sys.argv[2])
print(json.dumps(m.task(names[0] if len(names) == 1 else names, sys.argv[3], sys.argv[4])))
`;

// The interpreter `python3` names, resolved once as node hosts do (a shim would cost every task).
const PYTHON = pythonExecutable() || 'python3';

const invokePython: Invoke = (t, inputs, pathin, pathout) =>
  new Promise((resolve, reject) => {
    const p = spawn(PYTHON, ['-c', PY, t.scriptFile, JSON.stringify(inputs), pathin, pathout], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as string[]) : reject(new Error(`${t.name}: ${err}`))));
  });

const invokeJs: Invoke = async (t, inputs, pathin, pathout) => {
  const mod = (await import(pathToFileURL(t.scriptFile).href)) as { task: (i: string[], a: string, b: string) => string[] | Promise<string[]> };
  return mod.task(inputs, pathin, pathout);
};

/** Run one sample through the DAG; returns the files that reached the home. */
async function runJob(app: AppSpec, sample: string, work: string, invoke: Invoke): Promise<string[]> {
  const inbox = (t: string) => join(work, t, 'in');
  for (const t of app.dagTasks) mkdirSync(inbox(t), { recursive: true });
  for (const e of app.entryTasks) copyFileSync(sample, join(inbox(e), basename(sample)));
  const delivered: string[] = [];
  const order = [...app.dagTasks].sort((a, b) => depthOf(app, a) - depthOf(app, b));
  for (const name of order) {
    const t = app.graph.node(name);
    const inputs = readdirSync(inbox(name)).sort();
    expect(inputs, `inputs of ${name}`).to.have.length(t.numInputs);
    expect(new Set(inputs.map(jobPrefix)).size, `one job at ${name}`).to.equal(1);
    const outs = await invoke(t, inputs, inbox(name), join(work, name, 'out'));
    if (!t.broadcast) expect(outs, `FLAG false outputs of ${name}`).to.have.length(t.children.length);
    outs.forEach((o, i) => {
      for (const child of t.broadcast ? t.children : [t.children[i]!]) {
        if (child === HOME) delivered.push(o);
        else copyFileSync(o, join(inbox(child), basename(o)));
      }
    });
  }
  return delivered;
}

function depthOf(app: AppSpec, name: string): number {
  const parents = app.graph.predecessors(name) ?? [];
  return parents.length === 0 ? 0 : 1 + Math.max(...parents.map((p) => depthOf(app, p)));
}

describe('example apps run end to end (in-test DAG walker)', function () {
  this.timeout(60_000);
  let tmp = '';
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'jupiter-apps-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('dummy: the sink output of every sample records the whole DAG lineage', async () => {
    const app = await loadApp(join(appsDir, 'dummy'));
    const expected = app.dagTasks.map((t) => `${t}<-${(app.graph.predecessors(t) ?? []).sort().join(',') || HOME}`).sort();
    for (const sample of app.sampleInputs) {
      const job = jobPrefix(sample);
      const outs = await runJob(app, sample, join(tmp, 'dummy', job), invokePython);
      expect(outs.map((o) => basename(o))).to.deep.equal([`${job}_task6_home`]);
      const rec = JSON.parse(readFileSync(outs[0]!, 'utf8')) as { job: string; lineage: string[]; sources: string[]; to: string };
      expect(rec.job).to.equal(job);
      expect(rec.to).to.equal(HOME);
      expect(rec.lineage).to.deep.equal(expected);
      expect(rec.sources).to.have.length(1);
      expect(rec.sources[0]).to.match(new RegExp(`^${basename(sample)}:[0-9a-f]{16}$`));
    }
  });

  it('dummy: a task refuses an input addressed to another task', async () => {
    const app = await loadApp(join(appsDir, 'dummy'));
    const dir = join(tmp, 'misrouted');
    mkdirSync(join(dir, 'in'), { recursive: true });
    const [toTask1] = await invokePython(app.graph.node('task0'), ['1botnet.ipsum'], join(appsDir, 'dummy', 'sample_input'), join(dir, 'in'));
    let err: Error | undefined;
    await invokePython(app.graph.node('task2'), [basename(toTask1!)], join(dir, 'in'), join(dir, 'out')).catch((e: Error) => (err = e));
    expect(err?.message).to.match(/addressed to task1/);
  });

  it('anomaly: each report names exactly the planted anomalies and loses no flow', async () => {
    const app = await loadApp(join(appsDir, 'anomaly'));
    const expected = JSON.parse(readFileSync(join(appsDir, 'anomaly', 'expected.json'), 'utf8')) as Record<string, { flows: number; anomalies: Array<{ type: string; src_ip: string }> }>;
    expect(Object.keys(expected)).to.have.length(app.sampleInputs.length);
    for (const sample of app.sampleInputs) {
      const job = jobPrefix(sample);
      const outs = await runJob(app, sample, join(tmp, 'anomaly', job), invokeJs);
      expect(outs.map((o) => basename(o))).to.deep.equal([`${job}_fusion_report.json`]);
      const report = JSON.parse(readFileSync(outs[0]!, 'utf8')) as { flows: number; shards: number[]; verdict: string; anomalies: Array<{ type: string; src_ip: string }> };
      const want = expected[job]!;
      expect(report.flows).to.equal(want.flows);
      expect(report.shards).to.deep.equal([0, 1, 2]);
      const found = report.anomalies.map((a) => `${a.type} ${a.src_ip}`).sort();
      expect(found, job).to.deep.equal(want.anomalies.map((a) => `${a.type} ${a.src_ip}`).sort());
      expect(report.verdict).to.equal(want.anomalies.length ? 'anomalous' : 'clean');
    }
  });

  it('camera: 1 MiB frames between tasks, each result as expected.json says; a corrupted frame fails detect', async () => {
    const app = await loadApp(join(appsDir, 'camera'));
    const expected = JSON.parse(readFileSync(join(appsDir, 'camera', 'expected.json'), 'utf8')) as Record<string, { output: string; result: unknown }>;
    expect(Object.keys(expected).sort()).to.deep.equal(app.sampleInputs.map((s) => jobPrefix(s)).sort());
    const sample = app.sampleInputs[0]!;
    const job = jobPrefix(sample);
    const work = join(tmp, 'camera', job);
    const outs = await runJob(app, sample, work, invokeJs);
    expect(outs.map((o) => basename(o))).to.deep.equal([expected[job]!.output]);
    expect(JSON.parse(readFileSync(outs[0]!, 'utf8'))).to.deep.equal(expected[job]!.result);
    const frame = readFileSync(join(work, 'detect', 'in', `${job}_frame.pgm`));
    expect(frame.length).to.be.within(1024 * 1024, 1024 * 1024 + 512);
    // one flipped pixel: the digest in the header no longer matches
    frame.writeUInt8(frame.readUInt8(frame.length - 1) ^ 1, frame.length - 1);
    const bad = join(tmp, 'camera', 'corrupt');
    mkdirSync(bad, { recursive: true });
    writeFileSync(join(bad, `${job}_frame.pgm`), frame);
    let err: Error | undefined;
    await invokeJs(app.graph.node('detect'), [`${job}_frame.pgm`], bad, join(bad, 'out')).catch((e: Error) => (err = e));
    expect(err?.message).to.match(/do not match the frame's digest/);
  });

  it('anomaly: sample inputs stay small (< 200 KB each)', async () => {
    const app = await loadApp(join(appsDir, 'anomaly'));
    for (const s of app.sampleInputs) expect(readFileSync(s).length).to.be.below(200 * 1024);
  });
});
