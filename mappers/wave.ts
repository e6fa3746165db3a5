// WAVE (Sakulkar et al., ANRG-2018-01), as a pure simulation of the distributed protocol.
// Every node derives the same control relation from the DAG; the node that receives a task
// places the children that task controls, seeing only its own view (its own outgoing links and
// its peers' resource figures). The per-controller choice functions are exported so node agents
// can run exactly the same logic distributed and get identical results for the same seed.
import type { AppSpec } from '../config/types.js';
import { HOME } from '../config/types.js';
import type { Problem, QuadraticLink } from './problem.js';
import { quadraticOf } from './problem.js';
import type { Rng } from './prng.js';

export interface ControlRelation {
  /** child -> the task that places it (`home` for entry tasks). */
  controller: Record<string, string>;
  /** task (or `home`) -> the children it places, in the order they were assigned to it. */
  controls: Record<string, string[]>;
}

type DagLike = Pick<Problem, 'tasks' | 'edges'> | AppSpec;

function parentsOf(dag: DagLike): { tasks: string[]; parents: Map<string, string[]> } {
  const parents = new Map<string, string[]>();
  if ('dagTasks' in dag) {
    const isDag = new Set(dag.dagTasks);
    for (const name of dag.dagTasks) parents.set(name, []);
    for (const t of dag.tasks) {
      if (!t.isDag) continue;
      for (const c of t.children) if (c !== HOME && c !== t.name && isDag.has(c)) parents.get(c)?.push(t.name);
    }
    for (const [c, ps] of parents) parents.set(c, [...new Set(ps)]);
    return { tasks: dag.dagTasks, parents };
  }
  const pos = new Map(dag.tasks.map((t, i) => [t, i]));
  for (const t of dag.tasks) parents.set(t, []);
  for (const e of dag.edges) parents.get(e.to)?.push(e.from);
  for (const ps of parents.values()) ps.sort((a, b) => (pos.get(a) as number) - (pos.get(b) as number));
  return { tasks: dag.tasks, parents };
}

/**
 * The original's rule: children are visited sorted by name (plain code-unit order, like Python's
 * sorted()), and each child's parents in the order of their lines in configuration.txt (problem
 * task order). One parent: it controls the child. Several: the first parent that already
 * controls some task, else the first parent. Entry tasks are controlled by `home`.
 */
export function controlRelation(dag: DagLike): ControlRelation {
  const { tasks, parents } = parentsOf(dag);
  const controller: Record<string, string> = {};
  const controls: Record<string, string[]> = {};
  const entries = tasks.filter((t) => (parents.get(t) ?? []).length === 0);
  if (entries.length) controls[HOME] = entries.slice();
  for (const t of entries) controller[t] = HOME;
  const children = tasks.filter((t) => (parents.get(t) ?? []).length > 0).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  for (const c of children) {
    const ps = parents.get(c) as string[];
    const chosen = ps.length === 1 ? (ps[0] as string) : (ps.find((p) => p in controls && p !== HOME) ?? (ps[0] as string));
    controller[c] = chosen;
    (controls[chosen] ??= []).push(c);
  }
  return { controller, controls };
}

/** What one controller node knows when it places a child. */
export interface GreedyView {
  self: string;
  /** Its own outgoing links (seconds vs bytes), one per neighbour; the controller itself is not a neighbour. */
  links: Record<string, QuadraticLink>;
  /** Resource figures of the nodes (its peers and itself); a missing value counts as very busy. */
  resources: Record<string, { cpuPercent?: number; memPercent?: number }>;
  /** Nodes this controller already chose (the original's reuse penalty), in choice order. */
  penalized: string[];
}

/** Only neighbours whose predicted delay is below THRESHOLD x the smallest delay are considered. */
export const GREEDY_THRESHOLD = 15;
/** The original sets a chosen node's link constant to 100000 ms; the same 100 s here. */
export const GREEDY_PENALTY_SEC = 100;
const BUSY = Number.MAX_SAFE_INTEGER;

function load(view: GreedyView, node: string): number {
  const r = view.resources[node];
  return (r?.cpuPercent ?? BUSY) + (r?.memPercent ?? BUSY);
}

/**
 * WAVE greedy's node choice for one child, with `bytes` = the data volume the child receives
 * from its controlling parent (the original used a constant sample size instead).
 * delay_j = a*s^2 + b*s + c over the view's links to candidate j (c = 100 s once penalised);
 * valid = {j : delay_j < 15 * min delay} (the minimum itself always counts);
 * cost_j = delay_j (s) + cpu%_j + mem%_j; the smallest cost wins, ties -> candidate order.
 * With no valid neighbour, the candidate with the smallest cpu% + mem% wins (this is also the
 * only way the controller's own node is chosen, as in the original).
 * Returns the node and the controller's updated view (the chosen node penalised).
 */
export function chooseNodeGreedy(view: GreedyView, bytes: number, candidates: string[]): { node: string; view: GreedyView } {
  if (candidates.length === 0) throw new Error('chooseNodeGreedy: no candidate node');
  const delays: Array<{ node: string; delay: number }> = [];
  for (const j of candidates) {
    const l = view.links[j];
    if (!l || j === view.self) continue;
    const c = view.penalized.includes(j) ? GREEDY_PENALTY_SEC : l.c;
    delays.push({ node: j, delay: Math.max(0, l.a * bytes * bytes + l.b * bytes + c) });
  }
  let chosen: string | undefined;
  if (delays.length) {
    const min = Math.min(...delays.map((d) => d.delay));
    let best = Infinity;
    for (const d of delays) {
      if (!(d.delay < GREEDY_THRESHOLD * min || d.delay === min)) continue;
      const cost = d.delay + load(view, d.node);
      if (cost < best) {
        best = cost;
        chosen = d.node;
      }
    }
  }
  if (chosen === undefined) {
    let best = Infinity;
    for (const j of candidates) {
      const v = load(view, j);
      if (chosen === undefined || v < best) {
        best = v;
        chosen = j;
      }
    }
  }
  const node = chosen as string;
  return { node, view: { ...view, penalized: view.penalized.includes(node) ? view.penalized : [...view.penalized, node] } };
}

/** WAVE random's node choice: uniform over the candidates. */
export function chooseNodeRandom(rng: Rng, candidates: string[]): string {
  if (candidates.length === 0) throw new Error('chooseNodeRandom: no candidate node');
  return candidates[rng.int(candidates.length)] as string;
}

/** The view node `self` has of a problem: its outgoing links and everyone's resource figures. */
export function viewOf(problem: Problem, self: string): GreedyView {
  const links: Record<string, QuadraticLink> = {};
  const def = problem.defaultLink ? quadraticOf(problem.defaultLink) : undefined;
  for (const n of problem.nodes) if (n.name !== self && def) links[n.name] = def;
  for (const l of problem.links) if (l.from === self && l.to !== self) links[l.to] = quadraticOf(l.model);
  const resources: GreedyView['resources'] = {};
  for (const n of problem.nodes) resources[n.name] = { cpuPercent: n.cpuPercent, memPercent: n.memPercent };
  return { self, links, resources, penalized: [] };
}

/** Nodes that can run a task, in problem node order. */
export function candidatesOf(problem: Problem, task: string): string[] {
  const row = problem.exec[task] ?? {};
  return problem.nodes.map((n) => n.name).filter((n) => row[n] !== undefined);
}
