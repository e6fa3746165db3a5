// End to end through the real CLI: `jupiter deploy camera --wait` (the data-heavy example: a
// trigger of a few bytes becomes a 1 MiB frame on the capture task's node, 1 MiB per hop, a small
// result home) on the embedded default (process runtime), then `submit` of a new frame and of a
// tiny one, status counts, a deploy again with `--data-path direct` (frames from node to node) and
// `teardown --stack`. Every result must equal apps/camera/expected.json (as parsed JSON) and find
// each object the scene planted, in its lane, with its shape, centroid within 1 px.
import { expect } from 'chai';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec } from '../../config/types.js';
import { isAlive } from '../../circe/runtime/pid.js';
import { appsDir } from '../support/paths.js';
import { jobOf } from './oracle.js';
import { parseDeployOutput, statusJson, WorkDir, type DeployOutput } from './workdir.js';

interface CameraObject {
  track: string;
  shape: string;
  cx: number;
  cy: number;
  area: number;
  bbox: number[];
  brightness: number;
}
interface CameraResult {
  camera: string;
  frame: number;
  seed: number;
  width: number;
  height: number;
  sha256: string;
  noise: number;
  objects: CameraObject[];
}
interface CameraExpected {
  output: string;
  planted: Array<{ track: string; shape: string; x: number; y: number }>;
  result: CameraResult;
}

describe('e2e: jupiter deploy camera (1 MiB frames between tasks)', function () {
  this.timeout(120_000);
  let w: WorkDir;
  let app: AppSpec;
  let out: DeployOutput;
  const expected = JSON.parse(readFileSync(join(appsDir, 'camera', 'expected.json'), 'utf8')) as Record<string, CameraExpected>;
  const read = (name: string) => JSON.parse(readFileSync(join(out.outputDir, name), 'utf8')) as CameraResult;

  before(async () => {
    w = new WorkDir();
    app = await loadApp(join(appsDir, 'camera'));
    const r = await w.expectCli(['deploy', 'camera', '--wait'], 0, 110_000);
    out = parseDeployOutput(r.stdout);
  });

  after(async () => {
    await w?.dispose(['camera']);
  });

  it('delivers exactly the results of expected.json, one per trigger', () => {
    const jobs = app.sampleInputs.map((f) => jobOf(f)).sort();
    expect(jobs).to.deep.equal(Object.keys(expected).sort());
    expect(readdirSync(out.outputDir).sort()).to.deep.equal(jobs.map((j) => expected[j]!.output).sort());
    for (const j of jobs) expect(read(expected[j]!.output), j).to.deep.equal(expected[j]!.result);
    expect(out.items.map((i) => [i.item, i.state]).sort()).to.deep.equal(jobs.map((j) => [j, 'done']));
  });

  it('finds every planted object in its lane, with its shape, within 1 px', () => {
    for (const [job, e] of Object.entries(expected)) {
      const got = read(e.output);
      expect(got.objects.map((o) => o.track), job).to.deep.equal(e.planted.map((p) => p.track));
      for (const p of e.planted) {
        const o = got.objects.find((x) => x.track === p.track)!;
        expect(o.shape, `${job} ${p.track}`).to.equal(p.shape);
        expect(Math.abs(o.cx - p.x), `${job} ${p.track} cx`).to.be.at.most(1);
        expect(Math.abs(o.cy - p.y), `${job} ${p.track} cy`).to.be.at.most(1);
      }
    }
  });

  it('moves 1 MiB per hop and counts every item at every task', async () => {
    const st = await statusJson(w, 'camera');
    const n = app.sampleInputs.length;
    expect(st.status.items).to.deep.equal({ submitted: n, done: n, inFlight: 0 });
    for (const t of st.status.tasks) expect(t, t.task).to.include({ processed: n, failed: 0 });
    expect(st.status.deadLetterCount).to.equal(0);
    // The runtime records name each task's input file: triggers, then frames.
    const csv = (await w.expectCli(['status', 'camera', '--csv'])).stdout.trim().split('\n').slice(1).map((l) => l.split(','));
    expect(csv.filter((c) => c[0] === 'detect').map((c) => c[1]).sort()).to.deep.equal(app.sampleInputs.map((f) => `${jobOf(f)}_frame.pgm`).sort());
  });

  it('streams a new frame and a tiny frame with `jupiter submit --wait`', async () => {
    const dir = join(w.dir, 'more');
    mkdirSync(dir);
    // frame 10 of seed 42 again, under another job id: the same result
    writeFileSync(join(dir, 'again.trigger'), '{"camera":"cam0","frame":10,"seed":42}\n');
    writeFileSync(join(dir, 'tiny.trigger'), '{"camera":"cam1","frame":3,"seed":42,"width":8,"height":8}\n');
    await w.expectCli(['submit', 'camera', join(dir, 'again.trigger'), join(dir, 'tiny.trigger'), '--wait']);
    expect(read('again_track.json')).to.deep.equal(expected.f1!.result);
    const tiny = read('tiny_track.json');
    expect(tiny).to.include({ camera: 'cam1', frame: 3, seed: 42, width: 8, height: 8 });
    expect(tiny.objects.map((o) => o.track)).to.deep.equal(['lane0']);
    expect((await statusJson(w, 'camera')).status.items.done).to.equal(app.sampleInputs.length + 2);
  });

  it('deployed again with `--data-path direct` (frames node to node): the same results', async () => {
    const r = await w.expectCli(['deploy', 'camera', '--data-path', 'direct', '--wait'], 0, 110_000);
    out = parseDeployOutput(r.stdout);
    for (const [job, e] of Object.entries(expected)) expect(read(e.output), job).to.deep.equal(e.result);
    expect(readdirSync(out.outputDir)).to.have.length(Object.keys(expected).length);
    const st = await statusJson(w, 'camera');
    expect(st.status.items).to.include({ done: app.sampleInputs.length, inFlight: 0 });
    expect(st.status.deadLetterCount).to.equal(0);
  });

  it('`teardown --stack` leaves no process running', async () => {
    const pids = [...w.stackPids(), ...w.runnerStates('camera').flatMap((s) => [s.supervisorPid, s.runnerPid!])];
    expect(pids.filter((p) => !isAlive(p))).to.deep.equal([]);
    const r = await w.expectCli(['teardown', 'camera', '--stack']);
    expect(r.stdout).to.match(/removed \d+ Redis key\(s\) of camera/);
    expect(pids.filter(isAlive)).to.deep.equal([]);
    expect(w.stack()).to.deep.equal({});
  });
});
