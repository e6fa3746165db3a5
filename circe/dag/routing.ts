// Where a task's outputs go (Jupiter's FLAG), and how many outputs an item should produce.
import { HOME, type AppSpec, type TaskSpec } from '../../config/types.js';
import { SINK_QUEUE } from '../queue/keys.js';

export interface Route {
  /** Index into the task's returned outputs. */
  output: number;
  /** Receiving queues: task names, or the sink queue for `home`. */
  to: string[];
}

export class RoutingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RoutingError';
  }
}

const queueOf = (child: string): string => (child === HOME ? SINK_QUEUE : child);

/**
 * FLAG true: every output goes to every child. FLAG false: the i-th output goes to the i-th
 * child, so the task must return exactly one output per child.
 */
export function routeOutputs(task: TaskSpec, outputCount: number): Route[] {
  const children = task.children.map(queueOf);
  if (task.broadcast) {
    return Array.from({ length: outputCount }, (_, i) => ({ output: i, to: children }));
  }
  if (outputCount !== children.length) {
    throw new RoutingError(
      `task ${task.name} returned ${outputCount} output(s) for ${children.length} child(ren) ` +
      `(${task.children.join(', ')}); with FLAG false the i-th output goes to the i-th child, so the counts must match`,
    );
  }
  return children.map((c, i) => ({ output: i, to: [c] }));
}

/**
 * Outputs one input item is expected to deliver at the sink, counting paths through the DAG:
 * an entry task runs once per item; a task with NUM_INPUTS = k runs once per k arrivals; each
 * run sends one file to each child (FLAG false sends exactly one per child by construction;
 * for FLAG true we assume the task returns one output). `home` children count as deliveries.
 * Completion itself does not rely on this estimate: the item finishes when no job of it is in
 * flight any more (see keys.ts `pending`), which stays exact for tasks that return more files.
 */
export function expectedOutputs(app: AppSpec): number {
  const byName = new Map(app.tasks.filter((t) => t.isDag).map((t) => [t.name, t]));
  const arrivals = new Map<string, number>();
  for (const e of app.entryTasks) arrivals.set(e, (arrivals.get(e) ?? 0) + 1);
  let delivered = 0;
  for (const name of topoOrder(app)) {
    const t = byName.get(name);
    if (!t) continue;
    const runs = Math.floor((arrivals.get(name) ?? 0) / Math.max(1, t.numInputs));
    for (const c of t.children) {
      if (c === HOME) delivered += runs;
      else arrivals.set(c, (arrivals.get(c) ?? 0) + runs);
    }
  }
  return delivered;
}

function topoOrder(app: AppSpec): string[] {
  const dag = app.tasks.filter((t) => t.isDag);
  const indeg = new Map(dag.map((t) => [t.name, 0]));
  for (const t of dag) for (const c of t.children) if (indeg.has(c)) indeg.set(c, indeg.get(c)! + 1);
  const ready = dag.filter((t) => indeg.get(t.name) === 0).map((t) => t.name);
  const out: string[] = [];
  const byName = new Map(dag.map((t) => [t.name, t]));
  while (ready.length) {
    const n = ready.shift()!;
    out.push(n);
    for (const c of byName.get(n)?.children ?? []) {
      if (!indeg.has(c)) continue;
      indeg.set(c, indeg.get(c)! - 1);
      if (indeg.get(c) === 0) ready.push(c);
    }
  }
  return out;
}
