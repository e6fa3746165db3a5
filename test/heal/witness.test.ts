import { expect } from 'chai';
import { observeLive } from '../../orchestrator/heal/witness.js';

const W = 30_000;

describe('heal: when a missing heartbeat can mean a lost node (observeLive)', () => {
  it('a node gone while the others stay live counts at once, from the hub\'s first look on', () => {
    const since = new Map<string, number>();
    expect(observeLive(since, new Set(['a', 'b', 'c']), 0, W, true)).to.equal(true);
    expect(observeLive(since, new Set(['a', 'c']), 5000, W)).to.equal(true);
    // a node that joined later witnesses only once it has been live for W
    const later = new Map<string, number>();
    observeLive(later, new Set(['a']), 0, W, true);
    expect(observeLive(later, new Set(['b']), 1000, W)).to.equal(false);
    expect(observeLive(later, new Set(['b']), 1000 + W, W)).to.equal(true);
  });

  it('after every heartbeat expired together (the home cut off), no node counts until one has been back for a lifetime', () => {
    const since = new Map<string, number>();
    observeLive(since, new Set(['a', 'b', 'c']), 0, W, true);
    expect(observeLive(since, new Set(['a', 'b', 'c']), 60_000, W)).to.equal(true);
    expect(observeLive(since, new Set(), 70_000, W)).to.equal(false);
    // a is back first, b 12 s later, c never: c counts once a has been back for W
    expect(observeLive(since, new Set(['a']), 90_000, W)).to.equal(false);
    expect(observeLive(since, new Set(['a', 'b']), 102_000, W)).to.equal(false);
    expect(observeLive(since, new Set(['a', 'b']), 90_000 + W, W)).to.equal(true);
  });

  it('a node that drops out and back starts again', () => {
    const since = new Map<string, number>();
    observeLive(since, new Set(['a']), 0, W);
    observeLive(since, new Set(), 1000, W);
    expect(observeLive(since, new Set(['a']), 2000, W)).to.equal(false);
    expect(since.get('a')).to.equal(2000);
  });
});
