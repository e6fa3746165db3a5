// HEFT with duplication of the critical predecessor (as the original's heft_dup.py intends):
// for every candidate node p, the critical predecessor u of task t is the one whose output
// arrives last on p. If u is not already on p and a copy of u inserted into p's idle time would
// let t start earlier, the copy is considered; the node is then chosen by earliest finish with or
// without the copy (ties: no copy, then lowest node index). Copies are listed in
// `duplicates`, are not part of the mapping, and feed every later task on the same node;
// checkSchedule accepts an input from any copy. simulate() ignores copies (one per task).
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import { comm, compile } from '../compile.js';
import { arrival, createState, dataReady, durationAt, findSlot, findSlotIn, occupy, place, toResult } from '../engine.js';
import type { ListState } from '../engine.js';
import { orderByPriority, upwardRanks } from '../ranks.js';

interface Option {
  p: number;
  start: number;
  finish: number;
  dup?: { u: number; start: number; finish: number };
}

function hasCopyOn(st: ListState, u: number, p: number): boolean {
  if (st.node[u] === p) return true;
  return (st.dups.get(u) ?? []).some((c) => c.node === p);
}

function evaluate(st: ListState, t: number, p: number): Option | undefined {
  const cp = st.cp;
  const w = cp.exec[t * cp.P + p] as number;
  if (w === Infinity) return undefined;
  const bs = st.busyStart[p] as number[];
  const bf = st.busyFinish[p] as number[];
  // Inputs from the home (source hop) come first.
  let ready = cp.srcReady[t * cp.P + p] as number;
  let crit = -1;
  let critBytes = 0;
  let critArrive = -Infinity;
  let rest = ready;
  for (let i = cp.predStart[t] as number; i < (cp.predStart[t + 1] as number); i++) {
    const u = cp.predTask[i] as number;
    const a = arrival(st, u, cp.predBytes[i] as number, p);
    if (a > critArrive) {
      rest = Math.max(rest, critArrive);
      critArrive = a;
      crit = u;
      critBytes = cp.predBytes[i] as number;
    } else rest = Math.max(rest, a);
    if (a > ready) ready = a;
  }
  const start = findSlot(st, p, ready, w);
  const plain: Option = { p, start, finish: start + durationAt(st, p, start, w) };
  // Copies are not tried on shared hosts (cp.H > 0): a copy's core would be taken from the host too;
  // nor on a node with a CPU quota, where a copy would use up quota its later tasks count on.
  if (crit < 0 || cp.H > 0 || (cp.cpuCap[p] as number) > 0 || hasCopyOn(st, crit, p)) return plain;
  const wu = cp.exec[crit * cp.P + p] as number;
  if (wu === Infinity) return plain;
  const ds = findSlotIn(bs, bf, dataReady(st, crit, p), wu);
  const df = ds + wu;
  // The copy's output still takes the same-node hop to t (its overhead and bytes).
  const dReady = df + comm(cp, critBytes, p, p);
  if (dReady >= critArrive) return plain;
  const s2Ready = Math.max(rest, dReady);
  occupy(bs, bf, ds, df);
  const s2 = findSlotIn(bs, bf, s2Ready, w);
  let i = 0;
  while (bs[i] !== ds || bf[i] !== df) i++;
  bs.splice(i, 1);
  bf.splice(i, 1);
  if (s2 >= start) return plain;
  return { p, start: s2, finish: s2 + w, dup: { u: crit, start: ds, finish: df } };
}

export function heftDup(problem: Problem, _opts: MapperOptions = {}): MapResult {
  const cp = compile(problem);
  const st = createState(cp);
  for (const t of orderByPriority(cp, upwardRanks(cp))) {
    let best: Option | undefined;
    for (let p = 0; p < cp.P; p++) {
      const o = evaluate(st, t, p);
      // A sink task's output counts until it is home.
      const end = (x: Option): number => x.finish + (cp.sinkCost[t * cp.P + x.p] as number);
      if (o && (!best || end(o) < end(best))) best = o;
    }
    const b = best as Option;
    if (b.dup) {
      const copies = st.dups.get(b.dup.u) ?? [];
      copies.push({ node: b.p, start: b.dup.start, finish: b.dup.finish });
      st.dups.set(b.dup.u, copies);
      occupy(st.busyStart[b.p] as number[], st.busyFinish[b.p] as number[], b.dup.start, b.dup.finish);
    }
    place(st, t, b.p, b.start);
  }
  return toResult(st, 'heft-dup');
}
