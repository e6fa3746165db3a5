import { expect } from 'chai';
import { checkSchedule, repairMapping, simulate, type Problem } from '../../mappers/index.js';

// A chain a -> b -> c on three nodes; n3 is fast for b, n2 is slow for everything.
function problem(nodes: string[]): Problem {
  const exec: Problem['exec'] = {
    a: { n1: 1, n2: 3, n3: 2 },
    b: { n1: 2, n2: 6, n3: 1 },
    c: { n1: 1, n2: 3, n3: 2 },
  };
  for (const row of Object.values(exec)) for (const n of Object.keys(row)) if (!nodes.includes(n)) delete row[n];
  return {
    tasks: ['a', 'b', 'c'],
    edges: [{ from: 'a', to: 'b', bytes: 1e6 }, { from: 'b', to: 'c', bytes: 1e6 }],
    nodes: nodes.map((name) => ({ name })),
    exec,
    links: [],
    defaultLink: { latencySec: 0.01, bandwidthBytesPerSec: 10e6 },
  };
}

describe('repairMapping', () => {
  it('moves only the tasks of the lost node, to the best survivor', () => {
    const before = { a: 'n1', b: 'n3', c: 'n1' };
    const res = repairMapping(problem(['n1', 'n2']), before);
    expect(res.mapping.a).to.equal('n1');
    expect(res.mapping.c).to.equal('n1');
    expect(res.mapping.b).to.equal('n1'); // n1 (2 s) beats n2 (6 s + transfers)
    expect(res.moved).to.deep.equal({ b: ['n3', 'n1'] });
    const p = problem(['n1', 'n2']);
    expect(checkSchedule(p, simulate(p, res.mapping)).ok).to.equal(true);
  });

  it('is a no-op when every node survives', () => {
    const m = { a: 'n1', b: 'n3', c: 'n1' };
    const res = repairMapping(problem(['n1', 'n2', 'n3']), m);
    expect(res.mapping).to.deep.equal(m);
    expect(res.moved).to.deep.equal({});
  });

  it('refuses when nothing survives', () => {
    expect(() => repairMapping(problem([]), { a: 'n1', b: 'n1', c: 'n1' })).to.throw(/no surviving node/);
  });
});
