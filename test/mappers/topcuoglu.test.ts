import { expect } from 'chai';
import { checkSchedule, compile, mappers, upwardRanks } from '../../mappers/index.js';
import { topcuogluSample } from './samples.js';

describe('mappers: Topcuoglu 2002 sample DAG', () => {
  const problem = topcuogluSample();

  it('has the paper upward ranks', () => {
    const ranks = Array.from(upwardRanks(compile(problem))).map((r) => Math.round(r * 100) / 100);
    expect(ranks).to.deep.equal([108, 77, 80, 80, 69, 63.33, 42.67, 35.67, 44.33, 14.67]);
  });

  it('HEFT makespan is 80', () => {
    const r = mappers.heft!(problem);
    expect(r.makespan).to.be.closeTo(80, 1e-9);
    expect(checkSchedule(problem, r).errors).to.deep.equal([]);
  });

  it('CPOP makespan is 86', () => {
    const r = mappers.cpop!(problem);
    expect(r.makespan).to.be.closeTo(86, 1e-9);
    expect(checkSchedule(problem, r).errors).to.deep.equal([]);
  });

  it('every mapper gives a valid schedule; best is no worse than any', () => {
    const results = Object.entries(mappers).map(([name, m]) => [name, m(problem, { seed: 3, maxEvals: 3000 })] as const);
    for (const [name, r] of results) {
      expect(checkSchedule(problem, r).errors, name).to.deep.equal([]);
      expect(r.mapper).to.equal(name);
    }
    const best = results.find(([n]) => n === 'best')?.[1];
    for (const [, r] of results) expect(best!.makespan).to.be.at.most(r.makespan + 1e-9);
  });
});
