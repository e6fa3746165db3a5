import { expect } from 'chai';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ProfileSnapshot } from '../../config/types.js';
import type { MappingRecord } from '../../config/events.js';
import { planRemap } from '../../orchestrator/adapt/plan.js';
import { execRecordsOf, keepRecords } from '../../orchestrator/adapt/records.js';
import type { ExecRecord } from '../../profilers/models/exec-model.js';

const NODES = ['node1', 'node2', 'node3'];

function snapshot(app: AppSpec): ProfileSnapshot {
  return {
    takenAt: 0,
    nodes: NODES.map((node) => ({ node, cpuPercent: 10, cpuMean: 10, memPercent: 10, memMean: 10, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: 0 })),
    links: NODES.flatMap((from) => NODES.filter((to) => to !== from).map((to) => ({ from, to, a: 0, b: 1e-9, c: 0.001, latencySec: 0.001, bandwidthBytesPerSec: 1e9, samples: 10, updatedAt: 0 }))),
    exec: app.dagTasks.flatMap((task) => NODES.map((node) => ({ app: app.name, task, node, durationSec: 0.05, outputBytes: 1000, updatedAt: 0 }))),
  };
}

describe('adapt: re-mapping plan from the current models (orchestrator/adapt/plan.ts)', () => {
  let app: AppSpec;
  let current: MappingRecord;
  before(async () => {
    app = await loadApp('dummy');
    current = { app: app.name, mapper: 'heft', mapping: Object.fromEntries(app.dagTasks.map((t) => [t, 'node1'])), schedule: [], predictedMakespan: 0, ts: 0 };
  });

  it('a node that got 10x slower (runtime records): tasks move off it, with the predicted gain', () => {
    const records: ExecRecord[] = app.dagTasks.flatMap((task) => Array.from({ length: 20 }, (_, i) => ({ task, node: 'node1', inBytes: 1000, seconds: 0.5, at: 1000 + i })));
    const plan = planRemap({ app, snapshot: snapshot(app), records, current, mapper: 'heft', now: 2000 });
    expect(plan.moves.length).to.be.greaterThan(0);
    expect(Object.values(plan.after.mapping)).to.not.include('node1');
    expect(plan.gain).to.be.greaterThan(0.5);
    expect(plan.models.every((m) => m.node === 'node1' && m.n === 20)).to.equal(true);
  });

  it('without runtime records the one-shot profile decides (same models: no gain from the slow-down)', () => {
    const plan = planRemap({ app, snapshot: snapshot(app), records: [], current, mapper: 'heft' });
    expect(plan.models).to.deep.equal([]);
    expect(plan.after.makespan).to.be.at.most(plan.before.makespan + 1e-9);
  });

  it('a node of the current mapping is gone: gain 1 and the reason says which', () => {
    const snap = snapshot(app);
    snap.nodes = snap.nodes.filter((n) => n.node !== 'node1');
    const plan = planRemap({ app, snapshot: snap, records: [], current, mapper: 'heft' });
    expect(plan.lostNodes).to.deep.equal(['node1']);
    expect(plan.gain).to.equal(1);
    expect(plan.reason).to.include('node1');
  });

  it('moves asked for by hand are evaluated as they are: no mapper is looked up', () => {
    const task = app.dagTasks[0]!;
    const plan = planRemap({ app, snapshot: snapshot(app), records: [], current, mapper: 'no-such-mapper', target: { [task]: 'node2' } });
    expect(plan.moves).to.deep.equal([{ task, from: 'node1', to: 'node2' }]);
    expect(() => planRemap({ app, snapshot: snapshot(app), records: [], current, mapper: 'no-such-mapper' })).to.throw(/unknown mapper no-such-mapper/);
  });

  it('keeps the evidence of a node a task left (keepRecords): the task is not moved back onto the slow node', () => {
    const slow: ExecRecord[] = app.dagTasks.flatMap((task) => Array.from({ length: 40 }, (_, i) => ({ task, node: 'node1', inBytes: 1000, seconds: 0.5, at: 1000 + i })));
    // After the move the newest items show node2 only; a record older than the age limit goes.
    const fresh: ExecRecord[] = app.dagTasks.flatMap((task) => Array.from({ length: 20 }, (_, i) => ({ task, node: 'node2', inBytes: 1000, seconds: 0.05, at: 2000 + i })));
    const old = { task: app.dagTasks[0]!, node: 'node3', inBytes: 1000, seconds: 9, at: 1000 - 10 * 60_000 };
    const kept = keepRecords(keepRecords([], [...slow, old], { now: 2000 }), fresh, { now: 2100 });
    for (const task of app.dagTasks) {
      expect(kept.filter((r) => r.task === task && r.node === 'node1')).to.have.length(30); // the newest 30 of 40
      expect(kept.filter((r) => r.task === task && r.node === 'node2')).to.have.length(20);
    }
    expect(kept.filter((r) => r.node === 'node3')).to.deep.equal([]);
    expect(keepRecords(kept, fresh, { now: 2100 })).to.have.length(kept.length); // read again: no duplicates
    const onNode2 = { ...current, mapping: Object.fromEntries(app.dagTasks.map((t) => [t, 'node2'])) };
    const plan = planRemap({ app, snapshot: snapshot(app), records: kept, current: onNode2, mapper: 'heft' });
    expect(Object.values(plan.after.mapping)).to.not.include('node1');
  });

  it('reads the runners\' runtime records (rt hash fields) into execution records', () => {
    const recs = execRecordsOf({ 'task0|enter': '900', 'task0|start': '1000', 'task0|finish': '1250', 'task0|node': 'node2', 'task0|file': 'a.txt', 'task0|in': '4096', 'task1|start': '1300' });
    expect(recs).to.deep.equal([{ task: 'task0', node: 'node2', inBytes: 4096, seconds: 0.25, at: 1250 }]);
  });

  it('on one machine the one-shot profiles are pooled, what each node was seen doing is not: a node seen 10x slower is left', () => {
    const snap = snapshot(app);
    // One machine: node3's profile came out luckiest, which pooling evens out ...
    snap.nodes = snap.nodes.map((n) => ({ ...n, host: 'box' }));
    snap.exec = snap.exec.map((e) => ({ ...e, durationSec: e.node === 'node3' ? 0.02 : 0.05 }));
    const quiet = planRemap({ app, snapshot: snap, records: [], current, mapper: 'heft' });
    expect(quiet.problem.exec[app.dagTasks[0]!]).to.deep.equal({ node1: 0.05, node2: 0.05, node3: 0.05 });
    // ... while node1's runtime records still tell it apart.
    const records: ExecRecord[] = app.dagTasks.flatMap((task) => Array.from({ length: 20 }, (_, i) => ({ task, node: 'node1', inBytes: 1000, seconds: 0.5, at: 1000 + i })));
    const plan = planRemap({ app, snapshot: snap, records, current, mapper: 'heft', now: 2000 });
    expect(Object.values(plan.after.mapping)).to.not.include('node1');
    expect(plan.problem.exec[app.dagTasks[0]!]!.node1).to.be.greaterThan(0.2);
  });
});
