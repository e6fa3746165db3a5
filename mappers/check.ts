// Validity checker for schedules: every task scheduled once on a node that can run it for exactly
// its execution time (on a node with a CPU quota, Problem.nodes[].cpus < 1: at least that, at most
// its CPU at the quota's rate), every input present before the start (from the predecessor's primary copy
// or any duplicate of it, plus the transfer time between their nodes), no two slots overlapping
// on a node, and the makespan equal to the last finish (plus its sink hop home, when the problem
// has home hops; inputs from the home arrive after the source hop), no more tasks at once on a
// shared host than its cores (Problem.hostCores). Duplicates are checked the same way.
import type { Problem } from './problem.js';
import { comm, compile } from './compile.js';
import type { DuplicateSlot, MapResult, Slot } from './result.js';

export interface CheckReport {
  ok: boolean;
  errors: string[];
}

export function checkSchedule(problem: Problem, result: Pick<MapResult, 'schedule'> & Partial<Pick<MapResult, 'duplicates' | 'makespan' | 'mapping'>>): CheckReport {
  const cp = compile(problem);
  const errors: string[] = [];
  const dups = result.duplicates ?? [];
  let last = 0;
  for (const s of dups) last = Math.max(last, s.finish);
  for (const [name, s] of Object.entries(result.schedule)) {
    const t = cp.taskIndex.get(name);
    const p = cp.nodeIndex.get(s.node);
    last = Math.max(last, s.finish + (t !== undefined && p !== undefined ? (cp.sinkCost[t * cp.P + p] as number) : 0));
  }
  const eps = 1e-9 * Math.max(1, last);
  const copies = new Map<string, Slot[]>();
  const byNode = new Map<string, Array<{ what: string; start: number; finish: number }>>();

  const checkSlot = (task: string, s: Slot, what: string): void => {
    const t = cp.taskIndex.get(task);
    const p = cp.nodeIndex.get(s.node);
    if (t === undefined) return void errors.push(`${what}: unknown task`);
    if (p === undefined) return void errors.push(`${what}: unknown node "${s.node}"`);
    const w = cp.exec[t * cp.P + p] as number;
    if (w === Infinity) errors.push(`${what}: cannot run on ${s.node}`);
    else if ((cp.cpuCap[p] as number) > 0) {
      // A node with a CPU quota: from its execution time (alone) to its CPU at the quota's rate.
      const most = ((cp.work[t * cp.P + p] as number) + (cp.cpuExtra[p] as number)) / (cp.cpuCap[p] as number);
      const d = s.finish - s.start;
      if (d + eps < w || d > most + eps) errors.push(`${what}: lasts ${d}s but on ${s.node} (${cp.cpuCap[p]} CPU) it takes ${w}s to ${most}s`);
    } else if (Math.abs(s.finish - s.start - w) > eps) errors.push(`${what}: lasts ${s.finish - s.start}s but its execution time on ${s.node} is ${w}s`);
    if (s.start < -eps) errors.push(`${what}: starts before 0`);
    const list = byNode.get(s.node) ?? [];
    list.push({ what, start: s.start, finish: s.finish });
    byNode.set(s.node, list);
  };

  for (let t = 0; t < cp.T; t++) {
    const name = cp.taskNames[t] as string;
    const s = result.schedule[name];
    if (!s) {
      errors.push(`task ${name}: not scheduled`);
      continue;
    }
    if (result.mapping && result.mapping[name] !== s.node) errors.push(`task ${name}: mapped to ${result.mapping[name]} but scheduled on ${s.node}`);
    checkSlot(name, s, `task ${name}`);
    copies.set(name, [s]);
  }
  for (const name of Object.keys(result.schedule)) if (!cp.taskIndex.has(name)) errors.push(`task ${name}: not in the problem`);
  dups.forEach((d: DuplicateSlot, i) => {
    checkSlot(d.task, d, `duplicate #${i} of ${d.task}`);
    copies.get(d.task)?.push(d);
  });

  const precedence = (task: string, s: Slot, what: string): void => {
    const t = cp.taskIndex.get(task);
    const q = cp.nodeIndex.get(s.node);
    if (t === undefined || q === undefined) return;
    const src = cp.srcReady[t * cp.P + q] as number;
    if (s.start + eps < src) errors.push(`${what}: starts at ${s.start} before its input from the home arrives at ${src}`);
    for (let i = cp.predStart[t] as number; i < (cp.predStart[t + 1] as number); i++) {
      const u = cp.taskNames[cp.predTask[i] as number] as string;
      let arrive = Infinity;
      for (const c of copies.get(u) ?? []) {
        const p = cp.nodeIndex.get(c.node);
        if (p !== undefined) arrive = Math.min(arrive, c.finish + comm(cp, cp.predBytes[i] as number, p, q));
      }
      if (s.start + eps < arrive) errors.push(`${what}: starts at ${s.start} before the input from ${u} arrives at ${arrive}`);
    }
  };
  for (const [name, list] of copies) precedence(name, list[0] as Slot, `task ${name}`);
  dups.forEach((d, i) => precedence(d.task, d, `duplicate #${i} of ${d.task}`));

  for (const [node, list] of byNode) {
    list.sort((a, b) => a.start - b.start || a.finish - b.finish);
    for (let i = 1; i < list.length; i++) {
      const a = list[i - 1] as { what: string; finish: number };
      const b = list[i] as { what: string; start: number };
      if (b.start + eps < a.finish) errors.push(`node ${node}: ${a.what} and ${b.what} overlap`);
    }
  }
  // Shared hosts: never more of their nodes' tasks at once than they have cores.
  const byHost = new Map<number, Array<{ what: string; start: number; finish: number }>>();
  for (const [node, list] of byNode) {
    const h = cp.hostOf[cp.nodeIndex.get(node) as number] as number;
    if (h >= 0) byHost.set(h, [...(byHost.get(h) ?? []), ...list]);
  }
  for (const [h, list] of byHost) {
    const cap = cp.hostCap[h] as number;
    for (const x of list) {
      const running = list.filter((y) => y.start <= x.start + eps && y.finish > x.start + eps && y.finish - y.start > eps);
      if (running.length > cap) errors.push(`host of ${x.what}: ${running.length} tasks run at ${x.start} on ${cap} core(s)`);
    }
  }
  if (result.makespan !== undefined && Math.abs(result.makespan - last) > eps) errors.push(`makespan ${result.makespan} is not the last finish (sink hops included) ${last}`);
  return { ok: errors.length === 0, errors };
}
