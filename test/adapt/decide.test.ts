import { expect } from 'chai';
import { decide, type DecisionState } from '../../orchestrator/adapt/decide.js';
import { ADAPT_DEFAULTS, type AdaptSettings } from '../../config/types.js';

const plan = (gain: number, mapping: Record<string, string> = { t: 'n2' }, lostNodes: string[] = []) => ({ gain, lostNodes, after: { mapping } });

/** Feed a gain every second; return the times (s) at which the decision acted. */
function run(settings: AdaptSettings, gains: number[], mapping = (i: number) => ({ t: i % 2 ? 'n2' : 'n3' })): number[] {
  let st: DecisionState = {};
  const acts: number[] = [];
  gains.forEach((g, i) => {
    const r = decide(settings, st, plan(g, mapping(i)), i * 1000);
    st = r.state;
    if (r.verdict.act) acts.push(i);
  });
  return acts;
}

describe('adapt: the re-map decision (orchestrator/adapt/decide.ts)', () => {
  const auto: AdaptSettings = { mode: 'auto', threshold: 0.2, holdSec: 10 };

  it('defaults: suggest, 20%, a hold time', () => {
    expect(ADAPT_DEFAULTS).to.deep.equal({ mode: 'suggest', threshold: 0.2, holdSec: 30 });
  });

  it('off never acts', () => {
    expect(run({ ...auto, mode: 'off' }, new Array(60).fill(0.9))).to.deep.equal([]);
  });

  it('acts once the gain has passed the threshold for the hold time', () => {
    const gains = [...new Array(5).fill(0.1), ...new Array(30).fill(0.5)];
    expect(run(auto, gains, () => ({ t: 'n2' }))[0]).to.equal(15);
  });

  it('a blip shorter than the hold time does nothing', () => {
    const gains = [...new Array(5).fill(0.5), 0.1, ...new Array(5).fill(0.5), 0.1, ...new Array(5).fill(0.5)];
    expect(run(auto, gains)).to.deep.equal([]);
  });

  it('no flapping: two near-equal mappings alternating act at most once per hold time', () => {
    const acts = run(auto, new Array(100).fill(0.5));
    for (let i = 1; i < acts.length; i++) expect(acts[i]! - acts[i - 1]!).to.be.at.least(10);
    expect(acts.length).to.be.at.most(100 / 10);
  });

  it('suggest mode does not repeat the same suggestion', () => {
    expect(run({ ...auto, mode: 'suggest' }, new Array(100).fill(0.5), () => ({ t: 'n2' }))).to.have.length(1);
  });

  it('a lost node acts at once', () => {
    const r = decide(auto, {}, plan(0, { t: 'n2' }, ['n1']), 0);
    expect(r.verdict).to.include({ act: true, urgent: true });
  });
});
