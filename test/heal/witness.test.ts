import { expect } from 'chai';
import { countsLost, newLiveness, observeLive, type Liveness } from '../../orchestrator/heal/witness.js';

const W = 30_000;
const LIFE = 7500;

/** One look of the hub at `now`: the live nodes with when each last beat (expiring a lifetime later). */
function look(s: Liveness, now: number, beats: Record<string, number>, first = false): void {
  observeLive(s, new Map(Object.entries(beats).map(([n, at]) => [n, { at, expires: at + LIFE }])), now, W, first);
}

describe('heal: when a missing heartbeat means a lost node (witness.ts)', () => {
  it('a node gone while the others beat counts once one of them beat after its expiry, from the hub\'s first look on', () => {
    const s = newLiveness();
    look(s, 0, { a: 0, b: 0, c: 0 }, true);
    look(s, 2000, { a: 1500, b: 1000, c: 2000 });
    // b died after its beat at 1000: its heartbeat expired at 8500. a and c beat at 7000 and 8000.
    look(s, 9000, { a: 7000, c: 8000 });
    expect(countsLost(s, 'b', 9000, W)).to.equal(false);
    look(s, 10_500, { a: 10_000, c: 8000 });
    expect(countsLost(s, 'b', 10_500, W)).to.equal(true);
    expect(countsLost(s, 'a', 10_500, W)).to.equal(false);
    // a node the hub never saw live counts on any witness
    expect(countsLost(s, 'z', 10_500, W)).to.equal(true);
  });

  it('the home cut off: heartbeats expire one after the other with no beat between, then come back at their own pace: nobody counts until a node has been back for W and beat', () => {
    const s = newLiveness();
    look(s, 0, { a: 0, b: 0, c: 0 }, true);
    // Last beats before the cut at 60 s: a 58 s, b 59 s, c 60 s.
    look(s, 60_000, { a: 58_000, b: 59_000, c: 60_000 });
    look(s, 66_000, { b: 59_000, c: 60_000 });
    expect(countsLost(s, 'a', 66_000, W)).to.equal(false);
    look(s, 67_000, { c: 60_000 });
    expect(countsLost(s, 'a', 67_000, W)).to.equal(false);
    expect(countsLost(s, 'b', 67_000, W)).to.equal(false);
    look(s, 70_000, {});
    // Back: a first, b 12 s later, c never. a beats, but has not been back for W.
    look(s, 90_000, { a: 90_000 });
    expect(countsLost(s, 'b', 90_000, W)).to.equal(false);
    look(s, 102_000, { a: 102_000, b: 101_000 });
    expect(countsLost(s, 'c', 102_000, W)).to.equal(false);
    look(s, 90_000 + W, { a: 119_000, b: 119_500 });
    expect(countsLost(s, 'c', 90_000 + W, W)).to.equal(true);
  });

  it('a node whose key went before its lifetime was up (an agent stopped cleanly) counts at the next beat after the hub saw it missing', () => {
    const s = newLiveness();
    look(s, 0, { a: 0, b: 0 }, true);
    look(s, 2000, { a: 1500, b: 1000 });
    // b deregistered at 2500; its key would have lived until 8500.
    look(s, 4000, { a: 3000 });
    expect(countsLost(s, 'b', 4000, W)).to.equal(false);
    look(s, 6500, { a: 4500 });
    expect(countsLost(s, 'b', 6500, W)).to.equal(true);
  });

  it('a node that drops out and back starts its live time again', () => {
    const s = newLiveness();
    look(s, 0, { a: 0 });
    look(s, 1000, {});
    look(s, 2000, { a: 2000 });
    expect(s.liveSince.get('a')).to.equal(2000);
  });
});
