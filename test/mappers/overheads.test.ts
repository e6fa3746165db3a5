// The model's control costs and home hops (issue 12): per-task invocation overhead, per-hop
// overhead (same-node hops too), source hops from the home and sink hops back to it.
import { expect } from 'chai';
import { loadApp } from '../../config/app/load.js';
import type { ProfileSnapshot } from '../../config/types.js';
import type { Problem } from '../../mappers/index.js';
import { checkSchedule, listMappers, mappers, problemErrors, problemFromProfiles, simulate } from '../../mappers/index.js';
import { chainProblem, topcuogluSample } from './samples.js';

const MB = 1e6;

/** a -> b -> c, 1 MB between tasks, two nodes joined by 100 MB/s, home behind 1 MB/s to n1 and 10 MB/s to n2. */
const chain = chainProblem;

const home: Problem['home'] = {
  sources: [{ task: 'a', bytes: MB }],
  sinks: [{ task: 'c', bytes: 2 * MB }],
  links: [
    { node: 'n1', toNode: { latencySec: 0, bandwidthBytesPerSec: MB }, toHome: { latencySec: 0, bandwidthBytesPerSec: MB } },
    { node: 'n2', toNode: { latencySec: 0.001, bandwidthBytesPerSec: 10 * MB }, toHome: { a: 0, b: 1e-7, c: 0.001 } },
  ],
};

describe('mappers: overheads and home hops', () => {
  it('without the new fields the model is unchanged (same-node hops free)', () => {
    const r = simulate(chain(), { a: 'n1', b: 'n1', c: 'n1' });
    expect(r.makespan).to.be.closeTo(0.6, 1e-12);
    expect(simulate(chain(), { a: 'n1', b: 'n2', c: 'n1' }).makespan).to.be.closeTo(0.62, 1e-12);
  });

  it('adds the invocation overhead to every run and the hop overhead to every hop, same node included', () => {
    const p = chain({ invokeOverheadSec: { n1: 0.01, n2: 0.02 }, hopOverheadSec: { n1: 0.003, n2: 0.005 } });
    const same = simulate(p, { a: 'n1', b: 'n1', c: 'n1' });
    expect(same.makespan).to.be.closeTo(0.6 + 3 * 0.01 + 2 * 0.003, 1e-12);
    expect(same.schedule.b!.finish - same.schedule.b!.start).to.be.closeTo(0.21, 1e-12);
    // a@n1 -> b@n2: transfer 0.01 + n2's hop 0.005; b@n2 -> c@n1: 0.01 + n1's hop 0.003.
    const split = simulate(p, { a: 'n1', b: 'n2', c: 'n1' });
    expect(split.makespan).to.be.closeTo(0.11 + 0.015 + 0.22 + 0.013 + 0.31, 1e-12);
    for (const m of ['heft', 'cpop', 'peft', 'heft-dup', 'wave-greedy', 'best']) {
      const r = mappers[m]!(p, { budgetMs: 50, maxEvals: 200 });
      expect(checkSchedule(p, r).errors, m).to.deep.equal([]);
    }
  });

  it('counts the source hop from the home and the sink hop back to it', () => {
    const p = chain({ home, hopOverheadSec: { n1: 0.003, n2: 0.005 } });
    // All on n1: source 1 s + hop, runs 0.6 s, two same-node hops, sink 2 s + hop (the sender's).
    const n1 = simulate(p, { a: 'n1', b: 'n1', c: 'n1' });
    expect(n1.schedule.a!.start).to.be.closeTo(1.003, 1e-12);
    expect(n1.makespan).to.be.closeTo(1.003 + 0.6 + 0.006 + 2.003, 1e-12);
    // All on n2: source 0.001 + 0.1 + hop, sink 0.2 + 0.001 + hop.
    const n2 = simulate(p, { a: 'n2', b: 'n2', c: 'n2' });
    expect(n2.makespan).to.be.closeTo(0.106 + 0.6 + 0.01 + 0.206, 1e-12);
    expect(simulate(p, { a: 'n2', b: 'n2', c: 'n2' }, { policy: 'insertion' }).makespan).to.be.closeTo(n2.makespan, 1e-12);
    // Every schedule is valid; the EFT-driven mappers see the home's links and keep the chain off the slow n1.
    for (const { name } of listMappers().filter((x) => x.name !== 'wave-random')) {
      const r = mappers[name]!(p, { budgetMs: 50, maxEvals: 200 });
      expect(checkSchedule(p, r).errors, name).to.deep.equal([]);
      if (['heft', 'heft-dup', 'peft', 'best'].includes(name)) expect(r.makespan, name).to.be.closeTo(n2.makespan, 1e-9);
    }
  });

  it('the checker catches a start before the source hop and a makespan without the sink hop', () => {
    const p = chain({ home });
    const r = simulate(p, { a: 'n2', b: 'n2', c: 'n2' });
    const early = { ...r, schedule: { ...r.schedule, a: { node: 'n2', start: 0, finish: 0.1 } } };
    expect(checkSchedule(p, early).errors.join('\n')).to.match(/task a: starts at 0 before its input from the home arrives/);
    expect(checkSchedule(p, { ...r, makespan: r.schedule.c!.finish }).errors.join('\n')).to.match(/sink hops included/);
  });

  it('validates the new fields', () => {
    const bad = {
      ...chain(),
      invokeOverheadSec: { n9: 0.1 },
      hopOverheadSec: { n1: -1 },
      home: { sources: [{ task: 'zz', bytes: 1 }], sinks: [{ task: 'c', bytes: 1 }, { task: 'c', bytes: 2 }], links: [{ node: 'n7', toNode: { latencySec: 0, bandwidthBytesPerSec: 1 }, toHome: { latencySec: 0, bandwidthBytesPerSec: 1 } }] },
    };
    expect(problemErrors(bad)).to.deep.equal(['/hopOverheadSec/n1: must be >= 0']);
    const errs = problemErrors({ ...bad, hopOverheadSec: {} });
    expect(errs).to.include('/invokeOverheadSec/n9: unknown node "n9"');
    expect(errs).to.include('/home/sources/0/task: unknown task "zz"');
    expect(errs).to.include('/home/sinks/1: task "c" is listed twice');
    expect(errs).to.include('/home/links/0/node: unknown node "n7"');
    expect(problemErrors({ ...chain(), home: { sources: [], sinks: [], extra: 1 } })).to.deep.equal(['/home: unknown field "extra"']);
  });

  it('the Topcuoglu sample keeps its makespans with zero overheads', () => {
    const p = topcuogluSample();
    const zero = { ...p, invokeOverheadSec: Object.fromEntries(p.nodes.map((n) => [n.name, 0])), hopOverheadSec: {} };
    expect(mappers.heft!(zero).makespan).to.equal(80);
  });

  it('problemFromProfiles takes the measured overheads and the home links from the profile', async () => {
    const app = await loadApp('dummy');
    const now = 1;
    const profiles: ProfileSnapshot = {
      takenAt: now,
      nodes: ['node1', 'node2'].map((node) => ({ node, cpuPercent: 5, cpuMean: 5, memPercent: 5, memMean: 5, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: now })),
      links: [
        { from: 'home', to: 'node1', a: 0, b: 0, c: 0, latencySec: 0.002, bandwidthBytesPerSec: 1.25e6, samples: 4, updatedAt: now },
        { from: 'node1', to: 'home', a: 0, b: 8e-7, c: 0.003, latencySec: 0, bandwidthBytesPerSec: 0, samples: 4, updatedAt: now },
      ],
      exec: [{ app: 'dummy', task: 'task6', node: 'node1', durationSec: 0.01, outputBytes: 4000, updatedAt: now }],
      overheads: [
        { node: 'node1', hopSec: 0.004, invokeSec: 0.002, samples: 5, updatedAt: now },
        { node: 'node2', hopSec: 0.006, invokeSec: 0.003, samples: 5, updatedAt: now },
      ],
    };
    const p = problemFromProfiles(app, profiles, { sourceBytes: 100 });
    expect(p.invokeOverheadSec).to.deep.equal({ node1: 0.002, node2: 0.003 });
    expect(p.hopOverheadSec).to.deep.equal({ node1: 0.004, node2: 0.006 });
    expect(p.home?.sources).to.deep.equal([{ task: 'task0', bytes: 100 }]);
    expect(p.home?.sinks).to.deep.equal([{ task: 'task6', bytes: 4000 }]);
    expect(p.home?.links).to.deep.equal([
      { node: 'node1', toNode: { latencySec: 0.002, bandwidthBytesPerSec: 1.25e6 }, toHome: { a: 0, b: 8e-7, c: 0.003 } },
    ]);
    // An old profile (no overheads, no home links) builds the problem as before.
    const old = problemFromProfiles(app, { ...profiles, links: [], overheads: undefined });
    expect(old.home).to.equal(undefined);
    expect(old.hopOverheadSec).to.equal(undefined);
  });
});
