import { expect } from 'chai';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ProfileSnapshot } from '../../config/types.js';
import { checkSchedule, mappers, placeHelperTasks, problemFromProfiles } from '../../mappers/index.js';

function snapshot(): ProfileSnapshot {
  const now = 1;
  const nodes = ['node1', 'node2', 'node3'];
  return {
    takenAt: now,
    nodes: [...nodes, 'home'].map((node, i) => ({ node, cpuPercent: 50, cpuMean: 10 * (i + 1), memPercent: 50, memMean: 20, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: now })),
    links: [
      { from: 'node1', to: 'node2', a: 0, b: 1e-8, c: 0.002, latencySec: 0, bandwidthBytesPerSec: 0, samples: 10, updatedAt: now },
      { from: 'node2', to: 'node3', a: 0, b: 0, c: 0, latencySec: 0.005, bandwidthBytesPerSec: 1e7, samples: 10, updatedAt: now },
    ],
    exec: [
      { app: 'dummy', task: 'task0', node: 'node1', durationSec: 2, outputBytes: 3000, updatedAt: now },
      { app: 'dummy', task: 'task0', node: 'node2', durationSec: 4, outputBytes: 3000, updatedAt: now },
      { app: 'dummy', task: 'task1', node: 'node1', durationSec: 1, outputBytes: 500, updatedAt: now },
      { app: 'dummy', task: 'task3', node: 'home', durationSec: 7, outputBytes: 100, updatedAt: now },
      { app: 'dummy', task: 'task3', node: 'node1', durationSec: 99, outputBytes: 100, updatedAt: now },
      { app: 'other', task: 'task2', node: 'node1', durationSec: 50, outputBytes: 1, updatedAt: now },
    ],
  };
}

describe('mappers: problemFromProfiles', () => {
  let app: AppSpec;
  before(async () => {
    const base = await loadApp('dummy');
    // task3 is excluded from profiling (a "super task"); add a non-DAG helper.
    const tasks = base.tasks.map((t) => (t.name === 'task3' ? { ...t, execProfiler: false } : t));
    const helper = { ...(tasks[0] as AppSpec['tasks'][number]), name: 'helper0', isDag: false, children: [], numInputs: 1 };
    app = { ...base, tasks: [...tasks, helper, { ...helper, name: 'helper1' }, { ...helper, name: 'helper2' }, { ...helper, name: 'helper3' }] };
  });

  it('builds a valid problem following the documented rules', () => {
    const p = problemFromProfiles(app, snapshot());
    expect(p.tasks).to.deep.equal(app.dagTasks);
    expect(p.nodes.map((n) => n.name)).to.deep.equal(['node1', 'node2', 'node3']);
    expect(p.nodes[0]).to.deep.equal({ name: 'node1', cpuPercent: 10, memPercent: 20 });
    // Profiled on node1/node2, missing on node3 -> mean of the profiled nodes.
    expect(p.exec.task0).to.deep.equal({ node1: 2, node2: 4, node3: 3 });
    // Profiled only on node1 -> same value elsewhere.
    expect(p.exec.task1).to.deep.equal({ node1: 1, node2: 1, node3: 1 });
    // Never profiled for this app -> 1 ms (the record of another app is ignored).
    expect(p.exec.task2).to.deep.equal({ node1: 0.001, node2: 0.001, node3: 0.001 });
    // Super task: mean of all its records everywhere, node-independent.
    expect(p.exec.task3).to.deep.equal({ node1: 53, node2: 53, node3: 53 });
    const bytes = (from: string, to: string) => p.edges.find((e) => e.from === from && e.to === to)?.bytes;
    const t0 = app.tasks.find((t) => t.name === 'task0')!;
    const t1 = app.tasks.find((t) => t.name === 'task1')!;
    expect(t0.broadcast).to.equal(false);
    expect(bytes('task0', 'task1')).to.equal(3000 / t0.children.length); // FLAG false: split
    expect(t1.broadcast).to.equal(true);
    expect(bytes('task1', 'task4')).to.equal(500); // FLAG true: everything to every child
    expect(p.edges.some((e) => e.to === 'home')).to.equal(false);
    const link = (from: string, to: string) => p.links.find((l) => l.from === from && l.to === to)?.model;
    expect(link('node1', 'node2')).to.deep.equal({ a: 0, b: 1e-8, c: 0.002 });
    expect(link('node2', 'node1')).to.deep.equal({ a: 0, b: 1e-8, c: 0.002 }); // reverse direction
    expect(link('node2', 'node3')).to.deep.equal({ latencySec: 0.005, bandwidthBytesPerSec: 1e7 });
    expect(link('node1', 'node3')).to.deep.equal({ latencySec: 0.001, bandwidthBytesPerSec: 125e6 }); // default
    expect(p.entryNodes).to.deep.equal({ task0: 'node1' });
    const r = mappers.heft!(p);
    expect(checkSchedule(p, r).ok).to.equal(true);
  });

  it('places non-DAG helpers round-robin, outside the problem', () => {
    const p = problemFromProfiles(app, snapshot(), { nodes: ['node2', 'node3'] });
    expect(p.tasks).to.not.include('helper0');
    expect(placeHelperTasks(app, ['node2', 'node3'])).to.deep.equal({ helper0: 'node2', helper1: 'node3', helper2: 'node2', helper3: 'node3' });
  });

  it('pins statically placed tasks', () => {
    const p = problemFromProfiles({ ...app, staticPlacement: { task2: 'node3' } }, snapshot());
    expect(p.exec.task2).to.deep.equal({ node3: 0.001 });
    expect(mappers.heft!(p).mapping.task2).to.equal('node3');
  });
});
