import { expect } from 'chai';
import fc from 'fast-check';
import type { MapResult, Problem } from '../../mappers/index.js';
import { checkSchedule, fogInstance, heftPaperInstance, mappers, simulate } from '../../mappers/index.js';

function instances(): Array<{ label: string; problem: Problem }> {
  const out: Array<{ label: string; problem: Problem }> = [];
  const grid: Array<[number, number, number, number, number]> = [
    [20, 0.1, 0.5, 2, 0.1], [40, 1, 1, 3, 0.5], [60, 5, 2, 5, 1], [30, 10, 1, 30, 0.75], [25, 0.5, 2, 1, 0.25],
  ];
  grid.forEach(([v, ccr, alpha, outDegree, beta], i) => {
    out.push({ label: `heft-paper v${v} ccr${ccr}`, problem: heftPaperInstance({ v, ccr, alpha, outDegree, beta, procs: 3 + i, seed: 100 + i }) });
  });
  for (let i = 0; i < 3; i++) out.push({ label: `fog ${i}`, problem: fogInstance({ v: 15 + 10 * i, alpha: 1, outDegree: 2, edge: 4 + 2 * i, fog: 2, cloud: 1, meanBytes: 10 ** (5 + i), seed: 7 + i }) });
  return out;
}

describe('mappers: random instances', () => {
  const list = instances();
  const results = new Map<string, Record<string, MapResult>>();
  before(() => {
    for (const { label, problem } of list) {
      const byName: Record<string, MapResult> = {};
      for (const [name, fn] of Object.entries(mappers)) byName[name] = fn(problem, { seed: 9, maxEvals: 1500 });
      results.set(label, byName);
    }
  });

  it('every mapper output passes the checker', () => {
    for (const { label, problem } of list) {
      for (const [name, r] of Object.entries(results.get(label)!)) expect(checkSchedule(problem, r).errors, `${name} on ${label}`).to.deep.equal([]);
    }
  });

  it('best is never worse than any single mapper', () => {
    for (const { label } of list) {
      const rs = results.get(label)!;
      for (const [name, r] of Object.entries(rs)) expect(rs.best!.makespan, `best vs ${name} on ${label}`).to.be.at.most(r.makespan + 1e-9);
    }
  });

  it('best without duplicates is never worse than any duplicate-free mapper', () => {
    const { problem } = list[2]!;
    const r = mappers.best!(problem, { seed: 9, maxEvals: 500, allowDuplicates: false });
    expect(r.duplicates).to.deep.equal([]);
    for (const [name, fn] of Object.entries(mappers)) {
      if (name === 'best' || name === 'heft-dup') continue;
      expect(r.makespan, name).to.be.at.most(fn(problem, { seed: 9 }).makespan + 1e-9);
    }
    expect(r.makespan).to.be.at.most(simulate(problem, mappers['heft-dup']!(problem).mapping).makespan + 1e-9);
  });

  it('mappers are deterministic for a seed (best with maxEvals)', () => {
    const { problem } = list[1]!;
    for (const [name, fn] of Object.entries(mappers)) expect(fn(problem, { seed: 4, maxEvals: 300 }), name).to.deep.equal(fn(problem, { seed: 4, maxEvals: 300 }));
  });

  it('the insertion simulator reproduces HEFT and heft-balanced schedules', () => {
    for (const { label, problem } of list) {
      for (const name of ['heft', 'heft-balanced']) {
        const r = results.get(label)![name]!;
        expect(simulate(problem, r.mapping, { policy: 'insertion' }).makespan, `${name} ${label}`).to.be.closeTo(r.makespan, 1e-9);
      }
    }
  });

  it('heft-balanced respects the cap of K tasks per node (relaxed to ceil(tasks/nodes))', () => {
    const problem = heftPaperInstance({ v: 12, ccr: 5, alpha: 1, outDegree: 3, beta: 0.5, procs: 8, seed: 3 });
    for (const k of [2, 3]) {
      const r = mappers['heft-balanced']!(problem, { maxTasksPerNode: k });
      const count: Record<string, number> = {};
      for (const n of Object.values(r.mapping)) count[n] = (count[n] ?? 0) + 1;
      expect(Math.max(...Object.values(count))).to.be.at.most(k);
    }
    const big = heftPaperInstance({ v: 40, ccr: 1, alpha: 1, outDegree: 3, beta: 0.5, procs: 4, seed: 3 });
    const counts = Object.values(mappers['heft-balanced']!(big).mapping).reduce<Record<string, number>>((a, n) => ((a[n] = (a[n] ?? 0) + 1), a), {});
    expect(Math.max(...Object.values(counts))).to.be.at.most(10);
  });

  it('the simulator gives valid schedules for any mapping (property)', () => {
    const problem = list[3]!.problem;
    const nodes = problem.nodes.map((n) => n.name);
    fc.assert(fc.property(fc.array(fc.nat(nodes.length - 1), { minLength: problem.tasks.length, maxLength: problem.tasks.length }), fc.constantFrom('non-delay', 'insertion'), (idx, policy) => {
      const mapping = Object.fromEntries(problem.tasks.map((t, i) => [t, nodes[idx[i]!]!]));
      const r = simulate(problem, mapping, { policy: policy as 'non-delay' | 'insertion' });
      return checkSchedule(problem, r).ok;
    }), { numRuns: 60, seed: 1 });
  });

  it('the checker catches broken schedules', () => {
    const { problem } = list[0]!;
    const r = results.get(list[0]!.label)!.heft!;
    const child = problem.edges[0]!.to;
    const early = { ...r, schedule: { ...r.schedule, [child]: { ...r.schedule[child]!, start: -5, finish: r.schedule[child]!.finish - r.schedule[child]!.start - 5 } } };
    const errs = checkSchedule(problem, early).errors.join('\n');
    expect(errs).to.contain('starts before 0');
    expect(errs).to.contain(`task ${child}: starts at -5 before the input from`);
    const [a, b] = problem.tasks;
    const clash = { ...r, schedule: { ...r.schedule, [b!]: { ...r.schedule[a!]! , finish: r.schedule[a!]!.start + problem.exec[b!]![r.schedule[a!]!.node]! } } };
    expect(checkSchedule(problem, clash).errors.join('\n')).to.match(/overlap/);
    const { [a!]: _gone, ...rest } = r.schedule;
    expect(checkSchedule(problem, { ...r, schedule: rest }).errors).to.include(`task ${a}: not scheduled`);
  });

  it('heft-dup copies are checked and never in the mapping', () => {
    let copies = 0;
    for (const { label } of list) {
      const r = results.get(label)!['heft-dup']!;
      copies += r.duplicates.length;
      for (const d of r.duplicates) expect(r.mapping[d.task]).to.not.equal(d.node);
    }
    expect(copies).to.be.greaterThan(0);
  });
});
