// Graph rules of configuration.txt: every child exists, no cycles, NUM_INPUTS equals the number
// of DAG parents when all of them have FLAG false (NUM_INPUTS counts files of one job, and such a
// parent sends one per job), there is an entry task, and every task has a path to `home`.
// The DAG becomes a @dagrejs/graphlib Graph over DAG tasks only.
import { Graph } from '@dagrejs/graphlib';
import { inputError } from '../errors.js';
import { HOME } from '../types.js';
import type { TaskLine } from './configuration.js';

export interface DagShape<T extends TaskLine> {
  graph: Graph<string, T, undefined>;
  dagTasks: string[];
  entryTasks: string[];
  sinkTasks: string[];
}

/** A cycle as a list of task names where the last equals the first, or undefined. */
export function findCycle(tasks: TaskLine[]): string[] | undefined {
  const children = new Map(tasks.map((t) => [t.name, t.children.filter((c) => c !== HOME)]));
  const state = new Map<string, 1 | 2>(); // 1 = on the current path, 2 = done
  const path: string[] = [];
  // Iterative DFS: a 10,000-task chain must not overflow the stack.
  for (const start of tasks) {
    if (state.has(start.name)) continue;
    const stack: Array<{ name: string; next: number }> = [{ name: start.name, next: 0 }];
    state.set(start.name, 1);
    path.push(start.name);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const kids = children.get(top.name) ?? [];
      if (top.next < kids.length) {
        const c = kids[top.next++]!;
        const s = state.get(c);
        if (s === 1) return [...path.slice(path.indexOf(c)), c];
        if (s === undefined && children.has(c)) {
          state.set(c, 1);
          path.push(c);
          stack.push({ name: c, next: 0 });
        }
      } else {
        state.set(top.name, 2);
        path.pop();
        stack.pop();
      }
    }
  }
  return undefined;
}

/** Check the graph rules and build the graph. `file` is configuration.txt as shown in messages. */
export function buildDag<T extends TaskLine>(appName: string, tasks: T[], file: string): DagShape<T> {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const dag = tasks.filter((t) => t.isDag);
  for (const t of dag) {
    for (const c of t.children) {
      if (c === HOME) continue;
      const child = byName.get(c);
      if (!child) {
        throw inputError(`task ${t.name} has unknown child ${c}`, {
          file, line: t.line, hint: `define ${c} on its own line, or use "${HOME}" to send outputs back to the home`,
        });
      }
      if (!child.isDag) {
        throw inputError(`task ${t.name} has child ${c}, which is a non-DAG helper task (line ${child.line})`, {
          file, line: t.line, hint: 'helper tasks run once as scripts and take no inputs; remove it from the children',
        });
      }
    }
  }
  if (dag.length === 0) {
    throw inputError('no entry task: the app has no DAG tasks', { file, line: tasks[0]?.line ?? 1, hint: 'at least one task must not be a `<name> 1 false <name>` helper' });
  }
  const cycle = findCycle(dag);
  if (cycle) {
    const first = byName.get(cycle[0]!)!;
    throw inputError(`cycle: ${cycle.join(' -> ')}`, { file, line: first.line, hint: 'a DAG must not loop back; remove one of these edges' });
  }
  const graph = new Graph<string, T, undefined>({ directed: true, multigraph: false, compound: false });
  graph.setGraph(appName);
  for (const t of dag) graph.setNode(t.name, t);
  for (const t of dag) for (const c of t.children) if (c !== HOME) graph.setEdge(t.name, c);

  const entryTasks: string[] = [];
  for (const t of dag) {
    const parents = graph.predecessors(t.name) ?? [];
    if (parents.length === 0) {
      // The home may feed an entry task several files of one job (NUM_INPUTS of them): known
      // only at run time, like any count with a FLAG-true parent.
      entryTasks.push(t.name);
      continue;
    }
    // A FLAG-false parent sends exactly one file per job to each child, so with only such
    // parents the count is known now. A FLAG-true parent sends every output it makes, which is
    // known only at run time (a job short of NUM_INPUTS then becomes a dead letter).
    const allFlagFalse = parents.every((p) => !graph.node(p).broadcast);
    if (allFlagFalse && t.numInputs !== parents.length) {
      throw inputError(`NUM_INPUTS of ${t.name} is ${t.numInputs}, but it has ${parents.length} DAG parent(s) with FLAG false: ${parents.join(', ')}`, {
        file, line: t.line, hint: `set NUM_INPUTS to ${parents.length}: a FLAG-false parent sends one file per job to each child, so a join waits for one file from each parent`,
      });
    }
  }
  const firstDag = dag[0]!;
  if (!entryTasks.includes(firstDag.name)) {
    throw inputError(`the first task ${firstDag.name} is not an entry task (its parents: ${(graph.predecessors(firstDag.name) ?? []).join(', ')})`, {
      file, line: firstDag.line, hint: 'put an entry task (one no other task lists as a child) on the first task line',
    });
  }
  const sinkTasks = dag.filter((t) => t.children.includes(HOME)).map((t) => t.name);
  if (sinkTasks.length === 0) {
    throw inputError(`no path to ${HOME}: no task lists ${HOME} as a child`, {
      file, line: dag[dag.length - 1]!.line, hint: `add "${HOME}" to the children of the last task so its outputs come back`,
    });
  }
  // Every DAG task must reach home, or its outputs are lost.
  const reaches = new Set(sinkTasks);
  const pending = [...sinkTasks];
  while (pending.length > 0) {
    for (const p of graph.predecessors(pending.pop()!) ?? []) {
      if (!reaches.has(p)) {
        reaches.add(p);
        pending.push(p);
      }
    }
  }
  for (const t of dag) {
    if (!reaches.has(t.name)) {
      throw inputError(`task ${t.name} has no path to ${HOME}`, {
        file, line: t.line, hint: `its outputs would be lost: give it a child that leads to ${HOME}, or ${HOME} itself`,
      });
    }
  }
  return { graph, dagTasks: dag.map((t) => t.name), entryTasks, sinkTasks };
}

/** Depth of each DAG task: the longest path from an entry task (entry tasks have depth 0). */
export function taskDepths<T>(graph: Graph<string, T, undefined>, order: string[]): Map<string, number> {
  const depth = new Map<string, number>();
  const indeg = new Map(order.map((n) => [n, (graph.predecessors(n) ?? []).length]));
  const queue = order.filter((n) => indeg.get(n) === 0);
  for (const n of queue) depth.set(n, 0);
  while (queue.length > 0) {
    const n = queue.shift()!;
    for (const c of graph.successors(n) ?? []) {
      depth.set(c, Math.max(depth.get(c) ?? 0, depth.get(n)! + 1));
      indeg.set(c, indeg.get(c)! - 1);
      if (indeg.get(c) === 0) queue.push(c);
    }
  }
  return depth;
}
