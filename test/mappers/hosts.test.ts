// Nodes sharing a machine (issue 12): the embedded default's logical nodes all run on one host's
// cores, so the model lets at most `hostCores` of their tasks run at once.
import { expect } from 'chai';
import type { ProfileSnapshot } from '../../config/types.js';
import type { Problem } from '../../mappers/index.js';
import { checkSchedule, listMappers, mappers, problemErrors, simulate } from '../../mappers/index.js';
import { problemFromProfiles } from '../../mappers/index.js';
import { loadApp } from '../../config/app/load.js';
import { widestLevel } from '../../mappers/dag-width.js';

/** e fans out to x1..x4 (1 s each), one per node; all four nodes on host m. */
function fan(extra: Partial<Problem> = {}): Problem {
  const xs = ['x1', 'x2', 'x3', 'x4'];
  const ns = ['n1', 'n2', 'n3', 'n4'];
  return {
    tasks: ['e', ...xs],
    edges: xs.map((x) => ({ from: 'e', to: x, bytes: 0 })),
    nodes: ns.map((name) => ({ name, host: 'm' })),
    exec: Object.fromEntries([['e', { n1: 0.5, n2: 0.5, n3: 0.5, n4: 0.5 }], ...xs.map((x) => [x, { n1: 1, n2: 1, n3: 1, n4: 1 }])]),
    links: [],
    defaultLink: { latencySec: 0, bandwidthBytesPerSec: 1e9 },
    ...extra,
  };
}
const spread = { e: 'n1', x1: 'n1', x2: 'n2', x3: 'n3', x4: 'n4' };

describe('mappers: nodes sharing a host', () => {
  it('without hostCores (or with enough cores) every node runs on its own', () => {
    expect(simulate(fan(), spread).makespan).to.be.closeTo(1.5, 1e-12);
    expect(simulate(fan({ hostCores: { m: 4 } }), spread).makespan).to.be.closeTo(1.5, 1e-12);
  });

  it('runs at most hostCores tasks of the host at once, in both policies', () => {
    for (const policy of ['non-delay', 'insertion'] as const) {
      const p = fan({ hostCores: { m: 2 } });
      const r = simulate(p, spread, { policy });
      expect(r.makespan, policy).to.be.closeTo(2.5, 1e-12);
      expect(checkSchedule(p, r).errors, policy).to.deep.equal([]);
      expect(simulate(fan({ hostCores: { m: 1 } }), spread, { policy }).makespan, policy).to.be.closeTo(4.5, 1e-12);
    }
  });

  it('only nodes on the same host share: another host keeps its own cores', () => {
    const p = fan({ hostCores: { m: 1, k: 1 } });
    p.nodes = [{ name: 'n1', host: 'm' }, { name: 'n2', host: 'm' }, { name: 'n3', host: 'k' }, { name: 'n4', host: 'k' }];
    // x1 and x2 one after the other on m; x3 and x4 one after the other on k, at the same time.
    expect(simulate(p, spread).makespan).to.be.closeTo(2.5, 1e-12);
  });

  it('the checker rejects a schedule that runs more tasks than the host has cores', () => {
    const p = fan({ hostCores: { m: 2 } });
    const free = simulate(fan(), spread);
    expect(checkSchedule(p, free).errors.join('\n')).to.match(/4 tasks run at 0\.5 on 2 core/);
  });

  it('every mapper gives a valid schedule whose makespan the simulator reproduces for HEFT', () => {
    const p = fan({ hostCores: { m: 2 } });
    for (const { name: m } of listMappers()) {
      const r = mappers[m]!(p, { budgetMs: 50, maxEvals: 200 });
      expect(checkSchedule(p, r).errors, m).to.deep.equal([]);
    }
    const h = mappers.heft!(p);
    expect(simulate(p, h.mapping, { policy: 'insertion' }).makespan).to.be.closeTo(h.makespan, 1e-12);
    // With 2 cores the 4 branches cannot finish before 0.5 + 2 x 1 s.
    expect(mappers.best!(p, { budgetMs: 50 }).makespan).to.be.at.least(2.5 - 1e-9);
  });

  it('reports hostCores naming no node\'s host', () => {
    expect(problemErrors(fan({ hostCores: { z: 2 } })).join('\n')).to.match(/\/hostCores\/z: no node names host "z"/);
  });

  it('problemFromProfiles: hosts and cores from the resource profiles, a task\'s CPU through the runner as its invocation cost for the share of the widest level that finds no free core, where nodes outnumber the cores', async () => {
    const app = await loadApp('apps/dummy');
    const now = Date.now();
    const res = (node: string, host: string) => ({ node, host, cpuPercent: 1, cpuMean: 1, memPercent: 1, memMean: 1, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: now });
    const snap: ProfileSnapshot = {
      takenAt: now,
      nodes: [res('node1', 'box'), res('node2', 'box'), res('node3', 'box')],
      links: [],
      exec: [],
      overheads: [
        { node: 'node1', hopSec: 0.002, invokeSec: 0.001, taskCpuSec: 0.009, samples: 7, updatedAt: now },
        { node: 'node2', hopSec: 0.002, invokeSec: 0.001, samples: 7, updatedAt: now },
      ],
    };
    const p = problemFromProfiles(app, snap, { nodes: ['node1', 'node2', 'node3'] });
    expect(p.nodes.map((n) => n.host)).to.deep.equal(['box', 'box', 'box']);
    expect(p.hostCores).to.deep.equal({ box: 2 });
    // dummy's widest level is 3 tasks on 2 cores: a third of them waits for a core.
    expect(p.invokeOverheadSec!.node1).to.be.closeTo(0.001 + (1 / 3) * 0.008, 1e-12);
    expect(p.invokeOverheadSec!.node2).to.equal(0.001);
    expect(problemErrors(p)).to.deep.equal([]);
    const oneCore = problemFromProfiles(app, { ...snap, nodes: snap.nodes.map((n) => ({ ...n, cores: 1 })) }, { nodes: ['node1', 'node2', 'node3'] });
    expect(oneCore.invokeOverheadSec!.node1).to.be.closeTo(0.001 + (2 / 3) * 0.008, 1e-12);
    // camera is a chain: a core is free for each task, the idle call counts.
    const chain = problemFromProfiles(await loadApp('apps/camera'), snap, { nodes: ['node1', 'node2', 'node3'] });
    expect(chain.invokeOverheadSec).to.deep.equal({ node1: 0.001, node2: 0.001 });
    // Each node on a machine of its own: a core is free, the idle call counts.
    const own = problemFromProfiles(app, { ...snap, nodes: [res('node1', 'a'), res('node2', 'b'), res('node3', 'c')] }, { nodes: ['node1', 'node2', 'node3'] });
    expect(own.invokeOverheadSec).to.deep.equal({ node1: 0.001, node2: 0.001 });
  });

  it('widestLevel: the most tasks one level of the DAG holds', () => {
    const e = (from: string, to: string) => ({ from, to });
    expect(widestLevel(['a', 'b', 'c'], [e('a', 'b'), e('b', 'c')])).to.equal(1);
    // dummy: task0 -> 1, 2, 3 -> 4, 5 -> 6 (6 also hears from 2): levels of 1, 3, 2, 1
    expect(widestLevel(['t0', 't1', 't2', 't3', 't4', 't5', 't6'], [e('t0', 't1'), e('t0', 't2'), e('t0', 't3'), e('t1', 't4'), e('t2', 't4'), e('t1', 't5'), e('t3', 't5'), e('t2', 't6'), e('t4', 't6'), e('t5', 't6')])).to.equal(3);
    // a task is on its longest chain's level: b (after a and after x -> a) is not with x
    expect(widestLevel(['x', 'a', 'b', 'c'], [e('x', 'a'), e('a', 'b'), e('x', 'b'), e('x', 'c')])).to.equal(2);
    expect(widestLevel([], [])).to.equal(0);
  });

  it('problemFromProfiles pools the execution profiles of alike nodes (one machine, one CPU limit): the median of theirs, not the luckiest; a node far off keeps its own', async () => {
    const app = await loadApp('apps/camera');
    const now = Date.now();
    const res = (node: string, host: string, cpuLimit?: number) => ({ node, host, cpuPercent: 1, cpuMean: 1, memPercent: 1, memMean: 1, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: now, ...(cpuLimit ? { cpuLimit } : {}) });
    // As profiled on the edge-fog-cloud testbed's hosts (one machine): detect 6.7-25 ms.
    const detect: Record<string, number> = { fog1: 0.0067, fog2: 0.025, edge1: 0.012, edge2: 0.02, edge3: 0.011, cloud: 0.018, lone: 0.004 };
    const nodes = Object.keys(detect);
    const snap: ProfileSnapshot = {
      takenAt: now,
      nodes: [res('fog1', 'box', 1), res('fog2', 'box', 1), res('edge1', 'box', 0.5), res('edge2', 'box', 0.5), res('edge3', 'box', 0.5), res('cloud', 'box'), res('lone', 'other')],
      links: [],
      exec: app.dagTasks.flatMap((task) => nodes.map((node) => ({ app: app.name, task, node, durationSec: task === 'detect' ? detect[node]! : 0.001, outputBytes: 1000, updatedAt: now }))),
    };
    const p = problemFromProfiles(app, snap, { nodes });
    // fog: median of two = their mean; edge: the middle one; cloud and lone: alone in their group.
    expect(p.exec.detect).to.deep.equal({ fog1: 0.01585, fog2: 0.01585, edge1: 0.012, edge2: 0.012, edge3: 0.012, cloud: 0.018, lone: 0.004 });
    expect(problemFromProfiles(app, snap, { nodes, poolExec: false }).exec.detect).to.deep.equal(detect);
    // Only the nodes mapped onto count: without edge3 the edges' median is of edge1 and edge2.
    expect(problemFromProfiles(app, snap, { nodes: ['edge1', 'edge2'] }).exec.detect).to.deep.equal({ edge1: 0.016, edge2: 0.016 });
    // A node more than 3x off its group's median is a real difference, not noise: it keeps its own.
    const hog = problemFromProfiles(app, { ...snap, exec: snap.exec.map((e) => (e.task === 'detect' && e.node === 'edge3' ? { ...e, durationSec: 0.2 } : e)) }, { nodes });
    expect(hog.exec.detect).to.deep.include({ edge1: 0.02, edge2: 0.02, edge3: 0.2 });
    // Without a machine in the resources nothing is pooled.
    const anon = problemFromProfiles(app, { ...snap, nodes: snap.nodes.map(({ host: _h, ...n }) => n) }, { nodes });
    expect(anon.exec.detect).to.deep.equal(detect);
  });
});
