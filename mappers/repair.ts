// Repairing a mapping after nodes are lost: every task on a lost node moves to the surviving node
// that gives the lowest simulated makespan, the other tasks stay where they run (moving a healthy
// runner costs a restart and its in-flight work). Orphans are placed one at a time in the
// problem's task order, each seeing the placements made before it. Pure and deterministic.
import type { Mapping } from '../config/types.js';
import { inputError } from '../config/errors.js';
import type { Problem } from './problem.js';
import { simulate } from './simulate.js';

export interface RepairResult {
  mapping: Mapping;
  /** task -> [old node, new node] for every task that moved. */
  moved: Record<string, [string, string]>;
  makespan: number;
}

/**
 * `problem.nodes` must hold the surviving nodes only; `mapping` is the current placement of the
 * problem's tasks (some on nodes that are gone).
 */
export function repairMapping(problem: Problem, mapping: Mapping): RepairResult {
  const alive = new Set(problem.nodes.map((n) => n.name));
  if (alive.size === 0) throw inputError('no surviving node to move tasks to');
  const next: Mapping = {};
  const orphans: string[] = [];
  for (const t of problem.tasks) {
    const node = mapping[t];
    if (node !== undefined && alive.has(node) && problem.exec[t]?.[node] !== undefined) next[t] = node;
    else orphans.push(t);
  }
  // Provisional homes so every simulation sees a complete mapping: the first node a task can run on.
  for (const t of orphans) {
    const first = problem.nodes.find((n) => problem.exec[t]?.[n.name] !== undefined);
    if (!first) throw inputError(`task ${t} cannot run on any surviving node`);
    next[t] = first.name;
  }
  const moved: Record<string, [string, string]> = {};
  for (const t of orphans) {
    let best = next[t]!;
    let bestSpan = Infinity;
    for (const n of problem.nodes) {
      if (problem.exec[t]?.[n.name] === undefined) continue;
      const span = simulate(problem, { ...next, [t]: n.name }).makespan;
      if (span < bestSpan - 1e-12) {
        bestSpan = span;
        best = n.name;
      }
    }
    next[t] = best;
    moved[t] = [mapping[t] ?? '-', best];
  }
  return { mapping: next, moved, makespan: simulate(problem, next).makespan };
}
