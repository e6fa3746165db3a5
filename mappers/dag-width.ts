// How many tasks of a DAG can be ready at once: the most tasks on one level, a task's level being
// the longest chain of parents above it (entry tasks 0). Used to judge whether a machine's cores
// make its tasks queue (mappers/from-profiles.ts).
import type { ProblemEdge } from './problem.js';

export function widestLevel(tasks: string[], edges: Array<Pick<ProblemEdge, 'from' | 'to'>>): number {
  const parents = new Map<string, string[]>(tasks.map((t) => [t, []]));
  for (const e of edges) if (e.from !== e.to) parents.get(e.to)?.push(e.from);
  const level = new Map<string, number>();
  const visiting = new Set<string>();
  const levelOf = (t: string): number => {
    const known = level.get(t);
    if (known !== undefined) return known;
    if (visiting.has(t)) return 0; // a cycle is the validator's to report; do not loop here
    visiting.add(t);
    let l = 0;
    for (const p of parents.get(t) ?? []) if (parents.has(p)) l = Math.max(l, levelOf(p) + 1);
    visiting.delete(t);
    level.set(t, l);
    return l;
  };
  const count = new Map<number, number>();
  for (const t of tasks) {
    const l = levelOf(t);
    count.set(l, (count.get(l) ?? 0) + 1);
  }
  return Math.max(0, ...count.values());
}
