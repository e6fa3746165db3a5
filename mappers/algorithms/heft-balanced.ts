// HEFT with at most K tasks per node, like the original's HEFT_MODIFIED / MAX_TASK_ALLOWED
// (K = 2 by default), which stops plain HEFT from packing a whole chain on one node to save
// transfers. When K * nodes < tasks the cap cannot hold, so it is raised to ceil(tasks / nodes)
// (every node then gets at most its fair share). A task whose allowed nodes are all full or
// unable to run it ignores the cap.
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import { compile } from '../compile.js';
import { heftCompiled } from './heft.js';

export const DEFAULT_MAX_TASKS_PER_NODE = 2;

export function heftBalanced(problem: Problem, opts: MapperOptions = {}): MapResult {
  const cp = compile(problem);
  const k = Math.max(1, Math.floor(opts.maxTasksPerNode ?? DEFAULT_MAX_TASKS_PER_NODE));
  const cap = Math.max(k, Math.ceil(cp.T / cp.P));
  return heftCompiled(cp, 'heft-balanced', cap);
}
