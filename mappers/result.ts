// The result every mapper returns, and the options they accept.
import type { Mapping } from '../config/types.js';
import type { Problem } from './problem.js';

export interface Slot {
  node: string;
  start: number;
  finish: number;
}

/** An extra copy of a task (heft-dup); its output may feed children on the same node. */
export interface DuplicateSlot extends Slot {
  task: string;
}

export interface MapResult {
  mapper: string;
  /** task -> node; duplicates are not part of the mapping. */
  mapping: Mapping;
  /** The predicted schedule of every task's primary copy. */
  schedule: Record<string, Slot>;
  /** Extra copies (only heft-dup makes them); always present, usually empty. */
  duplicates: DuplicateSlot[];
  /** Predicted time from the first start (0) to the last finish, seconds; with home hops, from the item leaving the home (0) to its last output arriving there. */
  makespan: number;
  /** How the result was obtained when it is not obvious (best: the winning mapper, local search). */
  origin?: string;
}

export interface MapperOptions {
  /** Seed of every random choice (wave-random, best's local search). Default 1. */
  seed?: number;
  /** heft-balanced: at most this many tasks per node (default 2, relaxed when too small). */
  maxTasksPerNode?: number;
  /** best: local-search time budget in ms (default 1000). */
  budgetMs?: number;
  /** best: stop the local search after this many simulations (makes results machine-independent). */
  maxEvals?: number;
  /**
   * best: accept schedules with duplicate copies (heft-dup) as candidates (default true). Set it to
   * false when the runtime will not run copies: copy schedules then enter only as their mapping,
   * re-simulated without copies.
   */
  allowDuplicates?: boolean;
}

export type Mapper = (problem: Problem, opts?: MapperOptions) => MapResult;
