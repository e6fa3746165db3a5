import { expect } from 'chai';
import { blendExecProfiles, fitExecModels, predictExec, type ExecRecord } from '../../profilers/models/exec-model.js';
import type { ProfileSnapshot } from '../../config/types.js';

function prng(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 16807) % 2147483647) / 2147483647);
}

/** Records of a task on a node: seconds = base + perByte * bytes, with ±noise relative jitter. */
function records(task: string, node: string, base: number, perByte: number, n: number, from: number, noise = 0.05, seed = 1): ExecRecord[] {
  const rnd = prng(seed);
  return Array.from({ length: n }, (_, i) => {
    const inBytes = Math.round(1e4 + rnd() * 1e6);
    return { task, node, inBytes, seconds: (base + perByte * inBytes) * (1 + noise * (2 * rnd() - 1)), at: from + i * 1000 };
  });
}

const snapshot = (): ProfileSnapshot => ({
  takenAt: 0,
  nodes: [],
  links: [],
  exec: [
    { app: 'a', task: 't', node: 'n1', durationSec: 0.1, outputBytes: 500, updatedAt: 0 },
    { app: 'a', task: 't', node: 'n2', durationSec: 0.1, outputBytes: 500, updatedAt: 0 },
  ],
});

describe('profilers: online execution models (models/exec-model.ts)', () => {
  it('recovers time as a function of input size, with its error', () => {
    const [m] = fitExecModels(records('t', 'n1', 0.02, 1e-7, 30, 0));
    expect(m!.n).to.equal(30);
    expect(m!.perByteSec / 1e-7).to.be.closeTo(1, 0.1);
    expect(predictExec(m!, 5e5) / (0.02 + 0.05)).to.be.closeTo(1, 0.05);
    expect(m!.relError).to.be.within(0.005, 0.05);
  });

  it('a stall that has nothing to do with size (one item held up 300 ms) does not move the model', () => {
    // The live shape of test/adapt/remap-live: 12 items of 10-60 KB, 10 ms + 4 ms/KB.
    const recs: ExecRecord[] = Array.from({ length: 12 }, (_, i) => {
      const inBytes = 10_240 + i * 4_608;
      return { task: 't', node: 'n1', inBytes, seconds: 0.01 + (0.004 * inBytes) / 1024 + (i === 1 ? 0.3 : 0), at: i * 1000 };
    });
    const [m] = fitExecModels(recs);
    expect((m!.perByteSec * 1024) / 0.004).to.be.closeTo(1, 0.02);
    expect(m!.baseSec).to.be.closeTo(0.01, 0.002);
  });

  it('never a negative coefficient: a flat task is its mean', () => {
    const recs = records('t', 'n1', 0.05, 0, 20, 0, 0.2, 3);
    const [m] = fitExecModels(recs);
    expect(m!.perByteSec).to.be.at.least(0);
    expect(m!.baseSec).to.be.at.least(0);
    expect(predictExec(m!, 5e5) / 0.05).to.be.closeTo(1, 0.15);
  });

  it('a node that got busy: the recent window shifts the model within a window of items', () => {
    const calm = records('t', 'n1', 0.02, 1e-8, 60, 0);
    const busy = records('t', 'n1', 0.08, 4e-8, 30, 60_000, 0.05, 9); // 4x slower
    const before = fitExecModels(calm)[0]!;
    const after = fitExecModels([...calm, ...busy])[0]!;
    expect(predictExec(after, 5e5) / predictExec(before, 5e5)).to.be.closeTo(4, 0.4);
  });

  it('old records age out', () => {
    const old = records('t', 'n1', 0.02, 0, 10, 0);
    expect(fitExecModels(old, { now: 10 * 60_000, maxAgeMs: 60_000 })).to.deep.equal([]);
  });

  it('blends with the one-shot profile by evidence: 3 records weigh as much as the profile, 30 nearly replace it', () => {
    const few = fitExecModels(records('t', 'n1', 0.5, 0, 3, 0, 0));
    const blendFew = blendExecProfiles(snapshot(), 'a', few).exec.find((e) => e.node === 'n1')!;
    expect(blendFew.durationSec).to.be.closeTo((0.5 + 0.1) / 2, 1e-9);
    const many = fitExecModels(records('t', 'n1', 0.5, 0, 30, 0, 0));
    const blendMany = blendExecProfiles(snapshot(), 'a', many).exec.find((e) => e.node === 'n1')!;
    expect(blendMany.durationSec).to.be.closeTo((30 * 0.5 + 3 * 0.1) / 33, 1e-9);
    // the other node keeps its profile; another app is untouched
    expect(blendExecProfiles(snapshot(), 'a', many).exec.find((e) => e.node === 'n2')!.durationSec).to.equal(0.1);
    expect(blendExecProfiles(snapshot(), 'b', many).exec.find((e) => e.node === 'n1')!.durationSec).to.equal(0.1);
  });

  it('a (task, node) seen only at run time gets the model alone, with the profiled output size', () => {
    const m = fitExecModels(records('t', 'n3', 0.2, 0, 10, 0, 0));
    const e = blendExecProfiles(snapshot(), 'a', m).exec.find((x) => x.node === 'n3')!;
    expect(e.durationSec).to.be.closeTo(0.2, 1e-9);
    expect(e.outputBytes).to.equal(500);
  });
});
