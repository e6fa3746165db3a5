import { expect } from 'chai';
import fc from 'fast-check';
import { MAX_BANDWIDTH, fitLink, predictSeconds, type LinkSample } from '../../profilers/network/fit.js';

const KB = 1024;
const SIZES = [1, 10, 100, 1000, 10000].map((k) => k * KB);
const samplesOf = (f: (x: number) => number, sizes = SIZES, repeat = 1): LinkSample[] =>
  Array.from({ length: repeat }, () => sizes.map((bytes) => ({ bytes, seconds: f(bytes), at: 0 }))).flat();

describe('profilers: DRUPE link fit', () => {
  it('recovers a pure latency + bandwidth link (8 Mbit/s, 2 ms)', () => {
    const bw = 1e6; // bytes/s
    const fit = fitLink(samplesOf((x) => 0.002 + x / bw))!;
    expect(fit.latencySec).to.be.closeTo(0.002, 1e-5);
    expect(fit.bandwidthBytesPerSec / bw).to.be.closeTo(1, 1e-4);
    expect(fit.samples).to.equal(5);
    expect(predictSeconds(fit, 5e6)).to.be.closeTo(5.002, 1e-3);
  });

  it('recovers a quadratic (DRUPE model) exactly', () => {
    const [a, b, c] = [2e-15, 3e-8, 0.004];
    const fit = fitLink(samplesOf((x) => a * x * x + b * x + c))!;
    expect(fit.model).to.equal('quadratic');
    expect(fit.a / a).to.be.closeTo(1, 1e-4);
    expect(fit.b / b).to.be.closeTo(1, 1e-4);
    expect(fit.c / c).to.be.closeTo(1, 1e-4);
  });

  it('judges each size by its newest probes: two slow 1 MB probes from a busy start yield to one fast probe after', () => {
    // 30 Mbit/s; sizes 10, 100, 500 KB probed often, 1 MB rarely (the budget)
    const bw = 3.75e6;
    const f = (x: number) => 0.002 + x / bw;
    const sizes = [10, 100, 500].map((k) => k * KB);
    const samples: LinkSample[] = [];
    for (let i = 0; i < 20; i++) for (const bytes of sizes) samples.push({ bytes, seconds: f(bytes), at: 1000 + i });
    samples.push({ bytes: 1000 * KB, seconds: f(1000 * KB) * 1.6, at: 1 }, { bytes: 1000 * KB, seconds: f(1000 * KB) * 1.6, at: 2 });
    expect(fitLink(samples)!.bandwidthBytesPerSec / bw).to.be.below(0.75);
    samples.push({ bytes: 1000 * KB, seconds: f(1000 * KB), at: 2000 });
    expect(fitLink(samples)!.bandwidthBytesPerSec / bw).to.be.closeTo(1, 0.02);
    // and a link that really slowed is followed once three probes of each size say so
    const slow = (x: number) => 0.002 + x / (bw / 2);
    for (let i = 0; i < 3; i++) for (const bytes of [...sizes, 1000 * KB]) samples.push({ bytes, seconds: slow(bytes), at: 3000 + i });
    expect(fitLink(samples)!.bandwidthBytesPerSec / (bw / 2)).to.be.closeTo(1, 0.02);
  });

  it('ignores a single slow probe (the fastest of the newest per size)', () => {
    const f = (x: number) => 0.001 + x / 5e7;
    const samples = samplesOf(f, SIZES, 3);
    samples[0]!.seconds *= 50; // the 1 KB probe of round 1 stalls
    samples[4]!.seconds *= 3; // and one 10 MB probe
    const fit = fitLink(samples)!;
    expect(fit.latencySec).to.be.closeTo(0.001, 1e-4);
    expect(fit.bandwidthBytesPerSec / 5e7).to.be.closeTo(1, 0.01);
  });

  it('gets a token-bucket link right although small probes pass at line rate (tbf burst), even with a slow probe per size', () => {
    const rate = 1e6; // 8 Mbit/s after a 16 KB burst
    const t = (x: number) => 0.0005 + Math.max(0, x - 16 * KB) / rate + x / 1e9;
    const sizes = [10, 100, 1000, 3000].map((k) => k * KB);
    const samples = samplesOf(t, sizes, 2);
    for (let i = 0; i < sizes.length; i++) samples[i]!.seconds *= 3; // round 1 was slow everywhere
    const fit = fitLink(samples)!;
    const truth = (3000 * KB) / (t(3000 * KB) - 0.0005);
    expect(fit.bandwidthBytesPerSec / truth).to.be.closeTo(1, 0.05);
  });

  it('needs 3 samples of 2 sizes; falls back to a line with 2 sizes', () => {
    expect(fitLink([])).to.equal(undefined);
    expect(fitLink(samplesOf((x) => x / 1e6, [KB, 2 * KB]))).to.equal(undefined);
    const fit = fitLink(samplesOf((x) => 0.01 + x / 1e6, [KB, 1000 * KB], 2))!;
    expect(fit.model).to.equal('linear');
    expect(fit.bandwidthBytesPerSec / 1e6).to.be.closeTo(1, 1e-6);
  });

  it('never reports negative latency or bandwidth, even for nonsense data', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ bytes: fc.constantFrom(...SIZES), seconds: fc.double({ min: 1e-6, max: 100, noNaN: true }) }), { minLength: 3, maxLength: 40 }),
      (raw) => {
        const fit = fitLink(raw.map((r) => ({ ...r, at: 0 })));
        if (!fit) return;
        expect(fit.latencySec).to.be.at.least(0);
        expect(fit.bandwidthBytesPerSec).to.be.greaterThan(0).and.at.most(MAX_BANDWIDTH);
        expect(Number.isFinite(fit.a) && Number.isFinite(fit.b) && Number.isFinite(fit.c)).to.equal(true);
        // The model never predicts less time for more bytes over the probed range.
        expect(predictSeconds(fit, 10000 * KB)).to.be.at.least(predictSeconds(fit, KB) - 1e-12);
      },
    ), { numRuns: 300 });
  });

  it('time falling with size gives a clamped model with effectively unlimited bandwidth', () => {
    const fit = fitLink(samplesOf((x) => 1 / (1 + x)))!;
    expect(fit.model).to.equal('clamped');
    expect(fit.bandwidthBytesPerSec).to.equal(MAX_BANDWIDTH);
  });
});
