// A hop between two tasks on one node costs its bytes too (issue 12): the direct path keeps a large
// output in the node's store and the receiver copies it into its work folder, which the empty hop
// probe does not see. Problem.localHopSecPerByte prices it; cross-node hops keep their link models.
import { expect } from 'chai';
import { loadApp } from '../../config/app/load.js';
import type { NodeOverhead, ProfileSnapshot } from '../../config/types.js';
import type { Problem } from '../../mappers/index.js';
import { checkSchedule, listMappers, mappers, problemErrors, problemFromProfiles, simulate } from '../../mappers/index.js';
import { chainProblem } from './samples.js';
import { perByteFromGaps } from '../../profilers/overhead/local-hop-probe.js';

/** a -> b -> c, 1 MB between tasks, two nodes joined by 100 MB/s (10 ms per MB), hop 3 ms on each. */
const chain = (extra: Partial<Problem> = {}): Problem => chainProblem({ hopOverheadSec: { n1: 0.003, n2: 0.003 }, ...extra });

describe('mappers: the same-node hop costs its bytes (localHopSecPerByte)', () => {
  it('a same-node edge of d bytes costs the hop overhead + d x the node\'s cost per byte; cross-node edges keep their link', () => {
    const p = chain({ localHopSecPerByte: { n1: 5e-9, n2: 2e-9 } });
    // All on n1: two hops of 3 ms + 1 MB x 5 ns.
    expect(simulate(p, { a: 'n1', b: 'n1', c: 'n1' }).makespan).to.be.closeTo(0.6 + 2 * (0.003 + 0.005), 1e-12);
    expect(simulate(p, { a: 'n2', b: 'n2', c: 'n2' }).makespan).to.be.closeTo(0.6 + 2 * (0.003 + 0.002), 1e-12);
    // a@n1 -> b@n2 -> c@n2: the link (10 ms) + n2's hop, then a same-node hop on n2.
    expect(simulate(p, { a: 'n1', b: 'n2', c: 'n2' }).makespan).to.be.closeTo(0.6 + 0.013 + 0.005, 1e-12);
    // Without the field, the same-node hop costs the hop overhead alone (as before).
    expect(simulate(chain(), { a: 'n1', b: 'n1', c: 'n1' }).makespan).to.be.closeTo(0.606, 1e-12);
    expect(simulate(p, { a: 'n1', b: 'n1', c: 'n1' }, { policy: 'insertion' }).makespan).to.be.closeTo(0.616, 1e-12);
  });

  it('every mapper sees it: the list schedulers leave a node whose local hop costs more than the link, and every schedule checks', () => {
    // 30 ms per MB between two tasks on n1, 2 ms on n2: the chain belongs on n2.
    const p = chain({ localHopSecPerByte: { n1: 3e-8, n2: 2e-9 } });
    for (const { name } of listMappers().filter((x) => x.name !== 'wave-random')) {
      const r = mappers[name]!(p, { budgetMs: 50, maxEvals: 200 });
      expect(checkSchedule(p, r).errors, name).to.deep.equal([]);
      // The greedy ones put a on n1 (a tie, lowest index) and then leave it over the link (13 ms
      // against 33); `best` searches and finds the whole chain on n2.
      if (['heft', 'heft-dup', 'peft'].includes(name)) expect([r.mapping.b, r.mapping.c, r.makespan <= 0.618 + 1e-9], name).to.deep.equal(['n2', 'n2', true]);
      if (name === 'best') expect(r.makespan, name).to.be.closeTo(0.6 + 2 * 0.005, 1e-9);
    }
    // A node whose local hop costs more than a trip over the link: HEFT splits the chain.
    const dear = chain({ localHopSecPerByte: { n1: 3e-8, n2: 3e-8 } });
    const r = mappers.heft!(dear);
    expect(checkSchedule(dear, r).errors).to.deep.equal([]);
    expect(new Set(Object.values(r.mapping)).size).to.equal(2);
    expect(r.makespan).to.be.closeTo(0.6 + 2 * 0.013, 1e-9);
  });

  it('validates the field', () => {
    expect(problemErrors(chain({ localHopSecPerByte: { n1: -1e-9 } }))).to.deep.equal(['/localHopSecPerByte/n1: must be >= 0']);
    expect(problemErrors(chain({ localHopSecPerByte: { n9: 1e-9 } }))).to.deep.equal(['/localHopSecPerByte/n9: unknown node "n9"']);
  });

  it('problemFromProfiles takes each node\'s measured figure, pooled per machine like the other control costs', async () => {
    const app = await loadApp('apps/camera');
    const now = 1;
    const res = (node: string, host: string) => ({ node, host, cpuPercent: 1, cpuMean: 1, memPercent: 1, memMean: 1, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: now });
    const oh = (node: string, local?: number): NodeOverhead => ({ node, hopSec: 0.004, invokeSec: 0.001, ...(local !== undefined ? { localHopSecPerByte: local } : {}), samples: 7, updatedAt: now });
    const snap: ProfileSnapshot = { takenAt: now, nodes: [res('a', 'box'), res('b', 'box'), res('c', 'box'), res('d', 'alone')], links: [], exec: [] };
    const p = problemFromProfiles(app, { ...snap, overheads: [oh('a', 1e-9), oh('b', 4e-9), oh('c'), oh('d', 9e-9)] }, { nodes: ['a', 'b', 'c', 'd'] });
    // a, b, c share a machine: the median of the figures measured there; d keeps its own.
    expect(p.localHopSecPerByte).to.deep.equal({ a: 2.5e-9, b: 2.5e-9, c: 2.5e-9, d: 9e-9 });
    // Profiles without the figure build the problem as before.
    expect(problemFromProfiles(app, { ...snap, overheads: [oh('a'), oh('d')] }, { nodes: ['a', 'd'] }).localHopSecPerByte).to.equal(undefined);
  });

  it('perByteFromGaps: the fastest large gap less the fastest small one over the sizes\' difference, never negative', () => {
    const pairs = [{ big: 0.009, small: 0.004 }, { big: 0.020, small: 0.002 }, { big: 0.007, small: 0.004 }];
    expect(perByteFromGaps(pairs, 1_000_016, 16)).to.be.closeTo(0.005 / 1e6, 1e-18);
    expect(perByteFromGaps([{ big: 0.003, small: 0.004 }], 1_000_016, 16)).to.equal(0);
    expect(perByteFromGaps([], 1_000_016, 16)).to.equal(0);
  });
});
