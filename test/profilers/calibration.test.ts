// Task times observed at runtime against their profiles (profilers/models/calibration.ts): pure.
import { expect } from 'chai';
import type { ExecProfile, ProfileSnapshot } from '../../config/types.js';
import type { ExecRecord } from '../../profilers/models/exec-model.js';
import { CALIBRATION_BOUNDS, calibrateExecProfiles, calibrationOf, mergeCalibrations, MIN_CALIBRATION_RUNS } from '../../profilers/models/calibration.js';

const prof = (task: string, node: string, durationSec: number, inputsHash = 'h1', app = 'cam'): ExecProfile => ({ app, task, node, durationSec, outputBytes: 10, updatedAt: 1, inputsHash });
const snap = (exec: ExecProfile[]): ProfileSnapshot => ({ nodes: [], links: [], exec } as unknown as ProfileSnapshot);
const runs = (task: string, node: string, seconds: number[]): ExecRecord[] => seconds.map((s, i) => ({ task, node, inBytes: 0, seconds: s, at: 1000 + i }));

describe('profilers: calibration of task times by what the runners saw (calibration.ts)', () => {
  const s = snap([prof('capture', 'edge1', 0.004), prof('capture', 'cloud1', 0.005), prof('detect', 'edge1', 0.004), prof('other', 'edge1', 1, 'h1', 'dummy')]);

  it('a task\'s ratio is the median of its runs\' time over the profile of the node that ran each', () => {
    // edge1: 8 ms runs (2x), cloud1: 10 ms (2x), one stretched run at 40 ms: the median ignores it.
    const cal = calibrationOf([...runs('capture', 'edge1', [0.008, 0.008, 0.008, 0.04]), ...runs('capture', 'cloud1', [0.01, 0.01, 0.01])], s, 'cam', 5000);
    expect(Object.keys(cal)).to.deep.equal(['capture']);
    expect(cal.capture).to.deep.equal({ ratio: 2, n: 7, at: 5000, inputsHash: 'h1' });
  });

  it('too few runs, a node without a profile, another app\'s profile: no calibration', () => {
    expect(calibrationOf(runs('detect', 'edge1', Array(MIN_CALIBRATION_RUNS - 1).fill(0.008)), s, 'cam', 1)).to.deep.equal({});
    expect(calibrationOf(runs('capture', 'fog9', Array(10).fill(0.008)), s, 'cam', 1)).to.deep.equal({});
    expect(calibrationOf(runs('other', 'edge1', Array(10).fill(2)), s, 'cam', 1)).to.deep.equal({});
  });

  it('ratios stay within the bounds', () => {
    expect(calibrationOf(runs('capture', 'edge1', Array(6).fill(4)), s, 'cam', 1).capture!.ratio).to.equal(CALIBRATION_BOUNDS[1]);
    expect(calibrationOf(runs('capture', 'edge1', Array(6).fill(0)), s, 'cam', 1).capture!.ratio).to.equal(CALIBRATION_BOUNDS[0]);
  });

  it('scales every node\'s profile of a calibrated task of the app, and nothing else', () => {
    const { snapshot, applied } = calibrateExecProfiles(s, 'cam', { capture: { ratio: 2, n: 7, at: 1, inputsHash: 'h1' } });
    expect(applied).to.deep.equal([{ task: 'capture', ratio: 2, n: 7, at: 1, inputsHash: 'h1' }]);
    expect(snapshot.exec.map((e) => [e.app, e.task, e.node, e.durationSec])).to.deep.equal([
      ['cam', 'capture', 'edge1', 0.008], ['cam', 'capture', 'cloud1', 0.01], ['cam', 'detect', 'edge1', 0.004], ['dummy', 'other', 'edge1', 1],
    ]);
    expect(s.exec[0]!.durationSec, 'the input is not changed').to.equal(0.004);
  });

  it('passes over a calibration of a task changed since (another inputsHash) or no longer profiled', () => {
    const r = calibrateExecProfiles(s, 'cam', { capture: { ratio: 2, n: 7, at: 1, inputsHash: 'old' }, gone: { ratio: 3, n: 9, at: 1 } });
    expect(r.applied).to.deep.equal([]);
    expect(r.snapshot).to.equal(s);
  });

  it('the newest deployment\'s evidence replaces a task\'s; tasks it did not judge keep theirs', () => {
    const kept = { capture: { ratio: 2, n: 7, at: 1 }, detect: { ratio: 1.5, n: 9, at: 1 } };
    expect(mergeCalibrations(kept, { capture: { ratio: 3, n: 12, at: 2 } })).to.deep.equal({ capture: { ratio: 3, n: 12, at: 2 }, detect: { ratio: 1.5, n: 9, at: 1 } });
  });
});
