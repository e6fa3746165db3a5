import { expect } from 'chai';
import { loadApp } from '../../config/app/load.js';
import { checkSchedule, chooseNodeGreedy, chooseNodeRandom, controlRelation, createRng, fogInstance, mappers, rngFor } from '../../mappers/index.js';
import type { GreedyView } from '../../mappers/index.js';
import { problemFromLines } from './samples.js';

// Example A of the reference (ANRGUSC dummy_app), children after the task name.
const exampleA = [
  'task0 task1 task3 task2 task4', 'task1 task4', 'task2 task5 task4 task6', 'task3 task5 task4 task6',
  'task4 task6', 'task5 task6', 'task6 datasink1',
];
// Example B (Automatic-DAG-Generator dummy_app10).
const exampleB = [
  'task0 task2 task5 task1', 'task1 task7 task4 task3 task5', 'task2 task7 task4', 'task3 task7 task6 task8',
  'task4 task9', 'task5 task9 task6 task8', 'task6 task10', 'task7 task10', 'task8 task10', 'task9 task10', 'task10 home',
];

describe('mappers: WAVE', () => {
  it('control relation of the reference Example A', () => {
    expect(controlRelation(problemFromLines(exampleA)).controls).to.deep.equal({
      home: ['task0'],
      task0: ['task1', 'task2', 'task3', 'task4'],
      task2: ['task5', 'task6'],
    });
  });

  it('control relation of the reference Example B (children sorted by name: task10 before task2)', () => {
    expect(controlRelation(problemFromLines(exampleB)).controls).to.deep.equal({
      home: ['task0'],
      task0: ['task1', 'task2', 'task5'],
      task6: ['task10'],
      task1: ['task3', 'task4', 'task7'],
      task3: ['task6', 'task8'],
      task4: ['task9'],
    });
  });

  it('control relation of apps/dummy and apps/anomaly (AppSpec and Problem agree)', async () => {
    const dummy = await loadApp('dummy');
    expect(controlRelation(dummy).controls).to.deep.equal({
      home: ['task0'],
      task0: ['task1', 'task2', 'task3'],
      task1: ['task4', 'task5'],
      task2: ['task6'],
    });
    const anomaly = await loadApp('anomaly');
    const rel = controlRelation(anomaly);
    expect(rel.controls).to.deep.equal({ home: ['split'], split: ['detect0', 'detect1', 'detect2'], detect0: ['fusion'] });
    expect(rel.controller.fusion).to.equal('detect0');
  });

  it('wave-random is reproducible with a seed and changes with it', () => {
    const p = fogInstance({ v: 30, alpha: 1, outDegree: 3, edge: 8, fog: 2, cloud: 1, seed: 5 });
    const a = mappers['wave-random']!(p, { seed: 42 });
    const b = mappers['wave-random']!(p, { seed: 42 });
    const c = mappers['wave-random']!(p, { seed: 43 });
    expect(a.mapping).to.deep.equal(b.mapping);
    expect(a.mapping).to.not.deep.equal(c.mapping);
    expect(checkSchedule(p, a).errors).to.deep.equal([]);
    // The per-task stream is what a distributed node agent would use.
    const t = 't7';
    const cands = p.nodes.map((n) => n.name).filter((n) => p.exec[t]![n] !== undefined);
    expect(a.mapping[t]).to.equal(chooseNodeRandom(rngFor(42, t), cands));
    expect(createRng(1).next()).to.equal(createRng(1).next());
  });

  it('greedy choice: threshold, cost, reuse penalty and fallback', () => {
    const view: GreedyView = {
      self: 'a',
      links: {
        b: { a: 0, b: 0, c: 0.01 }, // 10 ms
        c: { a: 0, b: 0, c: 0.1 }, // 100 ms: valid (< 15 x 10 ms), cheaper resources
        d: { a: 0, b: 0, c: 1 }, // 1 s: outside the 15x cut-off although idle
      },
      resources: { a: { cpuPercent: 0, memPercent: 0 }, b: { cpuPercent: 50, memPercent: 10 }, c: { cpuPercent: 5, memPercent: 5 }, d: { cpuPercent: 0, memPercent: 0 } },
      penalized: [],
    };
    const first = chooseNodeGreedy(view, 1000, ['a', 'b', 'c', 'd']);
    expect(first.node).to.equal('c');
    expect(first.view.penalized).to.deep.equal(['c']);
    expect(view.penalized).to.deep.equal([]); // pure
    const second = chooseNodeGreedy(first.view, 1000, ['a', 'b', 'c', 'd']);
    expect(second.node).to.equal('b'); // c now costs 100 s of delay
    // No neighbour among the candidates: the least loaded candidate wins (the controller itself here).
    expect(chooseNodeGreedy(view, 1000, ['a']).node).to.equal('a');
    // Missing resource figures count as very busy.
    const blind: GreedyView = { ...view, resources: { b: { cpuPercent: 1, memPercent: 1 } } };
    expect(chooseNodeGreedy(blind, 1000, ['b', 'c']).node).to.equal('b');
  });

  it('wave-greedy uses the entry node and gives valid schedules', () => {
    const p = problemFromLines(exampleB);
    p.entryNodes = { task0: 'node2' };
    const r = mappers['wave-greedy']!(p);
    expect(r.mapping.task0).to.equal('node2');
    expect(checkSchedule(p, r).errors).to.deep.equal([]);
    expect(mappers['wave-greedy']!(p).mapping).to.deep.equal(r.mapping);
  });
});
