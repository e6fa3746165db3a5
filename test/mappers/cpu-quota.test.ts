// A node's own CPU capacity (issue 12): the testbed's 0.5-CPU edge hosts run one short task at its
// profiled speed, but several tasks of one item there run the quota out.
import { expect } from 'chai';
import type { ProfileSnapshot } from '../../config/types.js';
import type { Problem } from '../../mappers/index.js';
import { checkSchedule, listMappers, mappers, problemErrors, problemFromProfiles, simulate } from '../../mappers/index.js';
import { compile } from '../../mappers/compile.js';
import { makeEvaluator, mappingToIndices, simulateCompiled } from '../../mappers/simulate.js';
import { quotaDuration, quotaSlot, tokensAt, workOf } from '../../mappers/cpu-quota.js';
import { loadApp } from '../../config/app/load.js';
import { cgroupCpuLimit } from '../../profilers/resource/cgroup-cpu.js';

const ms = (x: number): number => x / 1000;

/** A chain t1 -> ... -> tn of 40 ms tasks: 40 ms on node a (cpus given), 45 ms on b (unlimited), 10 ms between them. */
function chain(n: number, cpus?: number): Problem {
  const tasks = Array.from({ length: n }, (_, i) => `t${i + 1}`);
  return {
    tasks,
    edges: tasks.slice(1).map((t, i) => ({ from: tasks[i] as string, to: t, bytes: 0 })),
    nodes: [{ name: 'a', ...(cpus !== undefined ? { cpus } : {}) }, { name: 'b' }],
    exec: Object.fromEntries(tasks.map((t) => [t, { a: ms(40), b: ms(45) }])),
    links: [],
    defaultLink: { latencySec: ms(10), bandwidthBytesPerSec: 1e9 },
  };
}
const allOnA = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`t${i + 1}`, 'a']));

describe('mappers: a node\'s own CPU capacity (cpus)', () => {
  it('the bucket: a task alone takes its profiled time, short or long; an empty bucket runs it at the quota\'s rate', () => {
    // 0.5 CPU, 100 ms period: 50 ms of CPU in the bucket, drained at 0.5 per second of running.
    for (const profiled of [ms(10), ms(100), ms(250)]) {
      expect(quotaDuration(workOf(profiled, 0.5, ms(50)), ms(50), 0.5)).to.be.closeTo(profiled, 1e-12);
    }
    expect(workOf(ms(250), 0.5, ms(50))).to.be.closeTo(ms(175), 1e-12); // 100 ms at full speed, then 150 ms at half
    expect(quotaDuration(ms(40), 0, 0.5)).to.be.closeTo(ms(80), 1e-12);
    expect(quotaDuration(ms(40), ms(10), 0.5)).to.be.closeTo(ms(60), 1e-12); // 20 ms at full speed, 20 ms of CPU at half
    // Busy 0-40 and 40-80 ms: 50 -> 30 -> 10 ms in the bucket; 20 ms idle refill 10 more.
    expect(tokensAt([0, ms(40)], [ms(40), ms(80)], ms(80), 0.5, ms(50))).to.be.closeTo(ms(10), 1e-12);
    expect(tokensAt([0, ms(40)], [ms(40), ms(80)], ms(100), 0.5, ms(50))).to.be.closeTo(ms(20), 1e-12);
    expect(tokensAt([0], [ms(40)], ms(500), 0.5, ms(50))).to.be.closeTo(ms(50), 1e-12); // never above the quota
    // A 25 ms gap fits a 20 ms task from a full bucket, not a 30 ms one.
    expect(quotaSlot([0, ms(45)], [ms(20), ms(90)], ms(20), ms(20), 0.5, ms(50))).to.be.closeTo(ms(20), 1e-12);
    expect(quotaSlot([0, ms(45)], [ms(20), ms(90)], ms(20), ms(30), 0.5, ms(50))).to.be.closeTo(ms(90), 1e-12);
  });

  it('tasks of one item on a 0.5-CPU node are stretched once the quota runs out, in both policies; 1 CPU or more changes nothing', () => {
    for (const policy of ['non-delay', 'insertion'] as const) {
      // 40 + 40 ms from a full bucket (50 -> 30 -> 10), then 20 ms at full speed + 20 ms of CPU at half, then 80 ms.
      const r = simulate(chain(4, 0.5), allOnA(4), { policy });
      expect(r.schedule.t3!.finish - r.schedule.t3!.start, policy).to.be.closeTo(ms(60), 1e-12);
      expect(r.makespan, policy).to.be.closeTo(ms(220), 1e-12);
      expect(checkSchedule(chain(4, 0.5), r).errors, policy).to.deep.equal([]);
      expect(simulate(chain(4), allOnA(4), { policy }).makespan, policy).to.be.closeTo(ms(160), 1e-12);
      expect(simulate(chain(4, 1), allOnA(4), { policy }).makespan, policy).to.be.closeTo(ms(160), 1e-12);
      expect(simulate(chain(4, 2), allOnA(4), { policy }).makespan, policy).to.be.closeTo(ms(160), 1e-12);
    }
    // One task alone: its profiled time.
    expect(simulate(chain(1, 0.5), allOnA(1)).makespan).to.be.closeTo(ms(40), 1e-12);
    // Time idle between the tasks refills the bucket: a 100 ms hop in between and nothing is stretched.
    const gap = { ...chain(4, 0.5), nodes: [{ name: 'a', cpus: 0.5 }, { name: 'b' }], hopOverheadSec: { a: ms(100) } };
    expect(simulate(gap, allOnA(4)).makespan).to.be.closeTo(ms(160 + 300), 1e-12);
  });

  it('HEFT and best stop packing a 0.5-CPU node once its quota runs out', () => {
    const free = mappers.heft!(chain(4));
    expect(Object.values(free.mapping)).to.deep.equal(['a', 'a', 'a', 'a']);
    const p = chain(4, 0.5);
    const h = mappers.heft!(p);
    // t1, t2 on a (40 ms each from the bucket), then over to b: 80 + 10 + 2 x 45 = 180 ms < 220 all on a.
    expect(h.mapping).to.deep.equal({ t1: 'a', t2: 'a', t3: 'b', t4: 'b' });
    expect(h.makespan).to.be.closeTo(ms(180), 1e-12);
    expect(simulate(p, h.mapping, { policy: 'insertion' }).makespan).to.be.closeTo(h.makespan, 1e-12);
    expect(mappers.best!(p, { budgetMs: 50 }).makespan).to.be.at.most(ms(180) + 1e-12);
  });

  it('every mapper gives a valid schedule on nodes with quotas, on a shared host too; the fast evaluator agrees with the simulator', () => {
    const p = chain(6, 0.5);
    const shared: Problem = { ...chain(6, 0.3), nodes: [{ name: 'a', cpus: 0.3, host: 'm' }, { name: 'b', host: 'm' }], hostCores: { m: 1 } };
    for (const prob of [p, shared]) {
      for (const { name: m } of listMappers()) {
        const r = mappers[m]!(prob, { budgetMs: 50, maxEvals: 200 });
        expect(checkSchedule(prob, r).errors, m).to.deep.equal([]);
      }
      const cp = compile(prob);
      for (const mapping of [allOnA(6), { t1: 'a', t2: 'b', t3: 'a', t4: 'a', t5: 'b', t6: 'a' }]) {
        const nodeOf = mappingToIndices(cp, mapping);
        for (const policy of ['non-delay', 'insertion'] as const) {
          expect(makeEvaluator(cp, policy)(nodeOf), policy).to.be.closeTo(simulateCompiled(cp, nodeOf, policy).makespan, 1e-12);
        }
      }
    }
    // The checker: shorter than alone, or longer than all of its CPU at the quota's rate, is wrong.
    const r = simulate(p, allOnA(6));
    const bad = { ...r, schedule: { ...r.schedule, t1: { node: 'a', start: 0, finish: ms(30) } } };
    expect(checkSchedule(p, bad).errors.join('\n')).to.match(/t1: lasts 0\.03s but on a \(0\.5 CPU\) it takes 0\.04s to 0\.08s/);
  });

  it('the runner\'s CPU per task (runnerCpuSec) comes out of the quota too: short, it is waited for at the quota\'s rate', () => {
    const p = { ...chain(3, 0.5), runnerCpuSec: { a: ms(20) } };
    for (const policy of ['non-delay', 'insertion'] as const) {
      // 50 - 20 = 30 -> t1 40 ms -> 10; t2: 10 - 20 = -10: (40 + 10) / 0.5 = 100 ms -> 0; t3: -20: 120 ms.
      const r = simulate(p, allOnA(3), { policy });
      expect(r.makespan, policy).to.be.closeTo(ms(40 + 100 + 120), 1e-9);
      expect(checkSchedule(p, r).errors, policy).to.deep.equal([]);
      const cp = compile(p);
      expect(makeEvaluator(cp, policy)(mappingToIndices(cp, allOnA(3))), policy).to.be.closeTo(r.makespan, 1e-12);
    }
    // Not charged on a node without a quota.
    expect(simulate({ ...chain(3), runnerCpuSec: { a: ms(20) } }, allOnA(3)).makespan).to.be.closeTo(ms(120), 1e-12);
    expect(problemErrors({ ...p, runnerCpuSec: { z: 1 } }).join('\n')).to.match(/\/runnerCpuSec\/z: unknown node "z"/);
  });

  it('the runner\'s CPU per byte moved (runnerCpuSecPerByte) comes out of the quota at the app\'s mean bytes per task', () => {
    // Two edges of 3 MB: 12 MB leave and enter tasks, 4 MB per task on the mean; 5 ns per byte = 20 ms per task.
    const heavy = { ...chain(3, 0.5), edges: [{ from: 't1', to: 't2', bytes: 3e6 }, { from: 't2', to: 't3', bytes: 3e6 }] };
    const byCount = simulate({ ...heavy, runnerCpuSec: { a: ms(20) } }, allOnA(3)).makespan;
    expect(byCount).to.be.closeTo(ms(40 + 100 + 120), 1e-9); // as runnerCpuSec of 20 ms above
    for (const policy of ['non-delay', 'insertion'] as const) {
      const p = { ...heavy, runnerCpuSecPerByte: { a: 5e-9 } };
      const r = simulate(p, allOnA(3), { policy });
      expect(r.makespan, policy).to.be.closeTo(byCount, 1e-9);
      expect(checkSchedule(p, r).errors, policy).to.deep.equal([]);
      // Both: 10 ms per task and 10 ms for the bytes.
      expect(simulate({ ...heavy, runnerCpuSec: { a: ms(10) }, runnerCpuSecPerByte: { a: 2.5e-9 } }, allOnA(3), { policy }).makespan).to.be.closeTo(byCount, 1e-9);
    }
    // Not charged without a quota, nor without bytes.
    expect(simulate({ ...chain(3), edges: heavy.edges, runnerCpuSecPerByte: { a: 5e-9 } }, allOnA(3)).makespan).to.be.closeTo(ms(120), 1e-12);
    expect(simulate({ ...chain(3, 0.5), runnerCpuSecPerByte: { a: 5e-9 } }, allOnA(3)).makespan).to.be.closeTo(simulate(chain(3, 0.5), allOnA(3)).makespan, 1e-12);
    expect(problemErrors({ ...heavy, runnerCpuSecPerByte: { z: 1 } }).join('\n')).to.match(/\/runnerCpuSecPerByte\/z: unknown node "z"/);
  });

  it('validates cpus and cpuPeriodSec', () => {
    expect(problemErrors({ ...chain(2), nodes: [{ name: 'a', cpus: 0 }, { name: 'b' }] }).join('\n')).to.match(/\/nodes\/0\/cpus: must be > 0/);
    expect(problemErrors({ ...chain(2), cpuPeriodSec: -1 }).join('\n')).to.match(/\/cpuPeriodSec: must be > 0/);
    // A longer period holds more CPU in the bucket: 200 ms x 0.5 = 100 ms, nothing stretched.
    expect(simulate({ ...chain(4, 0.5), cpuPeriodSec: 0.2 }, allOnA(4)).makespan).to.be.closeTo(ms(160), 1e-12);
  });

  it('problemFromProfiles: a node\'s cpuLimit (declared or its cgroup\'s) becomes its cpus; control costs pooled per machine', async () => {
    const app = await loadApp('apps/dummy');
    const now = Date.now();
    const res = (node: string, cpuLimit?: number) => ({
      node, host: 'box', cpuPercent: 1, cpuMean: 1, memPercent: 1, memMean: 1, cores: 2, load1: 0, freeMemBytes: 1e9, updatedAt: now,
      ...(cpuLimit !== undefined ? { cpuLimit, cpuLimitFrom: 'declared' as const } : {}),
    });
    const snap: ProfileSnapshot = { takenAt: now, nodes: [res('edge1', 0.5), res('cloud1', 2), res('other')], links: [], exec: [] };
    const p = problemFromProfiles(app, snap, { nodes: ['edge1', 'cloud1', 'other'] });
    expect(p.nodes.map((n) => [n.name, n.cpus])).to.deep.equal([['edge1', 0.5], ['cloud1', 2], ['other', undefined]]);
    // Control costs: nodes of one machine get its nodes' median; the quota node pays the runner's CPU beyond the invocation.
    const oh = (node: string, hopSec: number, invokeSec: number, taskCpuSec: number) => ({ node, hopSec, invokeSec, taskCpuSec, samples: 21, updatedAt: now });
    const q = problemFromProfiles(app, { ...snap, overheads: [oh('edge1', 0.004, 0.001, 0.02), oh('cloud1', 0.02, 0.003, 0.03), oh('other', 0.018, 0.002, 0.025)] }, { nodes: ['edge1', 'cloud1', 'other'] });
    expect(q.hopOverheadSec).to.deep.equal({ edge1: 0.018, cloud1: 0.018, other: 0.018 });
    expect(q.invokeOverheadSec!.edge1).to.be.closeTo(0.002 + (1 / 3) * (0.025 - 0.002), 1e-12); // 3 nodes on 2 cores: a third queues
    expect(Object.keys(q.runnerCpuSec!)).to.deep.equal(['edge1']);
    expect(q.runnerCpuSec!.edge1).to.be.closeTo(0.025 - q.invokeOverheadSec!.edge1!, 1e-12);
    expect(q.runnerCpuSecPerByte).to.equal(undefined); // not measured
    // CPU per byte, pooled like the rest, on the quota node only.
    const withBytes = problemFromProfiles(app, { ...snap, overheads: [{ ...oh('edge1', 0.004, 0.001, 0.02), runnerCpuSecPerByte: 4e-9 }, { ...oh('cloud1', 0.02, 0.003, 0.03), runnerCpuSecPerByte: 1e-8 }, { ...oh('other', 0.018, 0.002, 0.025), runnerCpuSecPerByte: 6e-9 }] }, { nodes: ['edge1', 'cloud1', 'other'] });
    expect(withBytes.runnerCpuSecPerByte).to.deep.equal({ edge1: 6e-9 });
    const alone = problemFromProfiles(app, { ...snap, nodes: [res('edge1', 0.5), { ...res('cloud1', 2), host: 'other-box' }, { ...res('other'), host: 'third' }], overheads: [oh('edge1', 0.004, 0.001, 0.02), oh('cloud1', 0.02, 0.003, 0.03), oh('other', 0.018, 0.002, 0.025)] }, { nodes: ['edge1', 'cloud1', 'other'] });
    expect(alone.hopOverheadSec).to.deep.equal({ edge1: 0.004, cloud1: 0.02, other: 0.018 });
  });

  it('cgroupCpuLimit: the smallest quota from the process\'s cgroup up to the root, among the folders it can see', () => {
    const fs = (files: Record<string, string>) => (path: string): string => {
      const v = files[path];
      if (v === undefined) throw new Error(`ENOENT ${path}`);
      return v;
    };
    // A process on the machine (v1): its own cgroup has none, the parent 0.5 CPU.
    expect(cgroupCpuLimit(fs({
      '/proc/self/cgroup': '4:memory:/x\n3:cpu,cpuacct:/jtb1-edge4/abc\n0::/\n',
      '/cg/cpu,cpuacct/jtb1-edge4/abc/cpu.cfs_quota_us': '-1\n', '/cg/cpu,cpuacct/jtb1-edge4/abc/cpu.cfs_period_us': '100000\n',
      '/cg/cpu,cpuacct/jtb1-edge4/cpu.cfs_quota_us': '50000\n', '/cg/cpu,cpuacct/jtb1-edge4/cpu.cfs_period_us': '100000\n',
      '/cg/cpu,cpuacct/cpu.cfs_quota_us': '-1\n', '/cg/cpu,cpuacct/cpu.cfs_period_us': '100000\n',
    }), '/cg')).to.equal(0.5);
    // Inside a container (v1): only its own folder, mounted at the root, is visible: its limit is
    // the container's (docker.cpus), not the node's, so none.
    expect(cgroupCpuLimit(fs({
      '/proc/self/cgroup': '1:cpu:/jtb1-fog1/abc\n',
      '/cg/cpu/cpu.cfs_quota_us': '50000', '/cg/cpu/cpu.cfs_period_us': '100000',
    }), '/cg')).to.equal(undefined);
    // v2: cpu.max up the tree; "max" is no limit.
    expect(cgroupCpuLimit(fs({
      '/proc/self/cgroup': '0::/a/b\n', '/cg/a/b/cgroup.controllers': 'cpu\n', '/cg/a/b/cpu.max': 'max 100000\n', '/cg/a/cpu.max': '150000 100000\n',
    }), '/cg')).to.equal(1.5);
    expect(cgroupCpuLimit(fs({ '/proc/self/cgroup': '0::/\n' }), '/cg')).to.equal(undefined);
    expect(cgroupCpuLimit(fs({}), '/cg')).to.equal(undefined);
  });
});
