// How the execution profiler times one task's call on one input: the repeat policy, shared by the
// calls timed in the agent's process (Python tasks, whose code runs in an interpreter of its own)
// and in the JS timing host (js-timing-host.ts).
import { performance } from 'node:perf_hooks';

/** Repeats of a call that took under this long (s): the first call is then a warm-up. */
const REPEAT_UNDER_SEC = 1;

/**
 * How many calls to time after the warm-up: at least `min`; more up to `max` while they took under
 * `budgetSec` in all; short calls more still, up to `shortMax` within `shortBudgetSec`.
 */
export interface RepeatPolicy {
  min: number;
  max: number;
  budgetSec: number;
  shortMax: number;
  shortBudgetSec: number;
  /**
   * What the budgets count: the timed calls' wall time, or the CPU this process spent on them
   * (its compiler threads included), which runs at the same rate whatever a CPU quota makes of
   * the wall time.
   */
  budgetOf: 'wall' | 'cpu';
}

/**
 * A call of a few ms is hit by interference more often than not (camera's 5 ms tasks, four nodes
 * of a 2-core machine timing in turns: up to 21 ms as the fastest of five, 6.5 ms as the fastest of
 * ten), hence ten of those.
 */
export const REPEATS: RepeatPolicy = { min: 2, max: 5, budgetSec: 0.3, shortMax: 10, shortBudgetSec: 0.1, budgetOf: 'wall' };

/**
 * JavaScript: V8 runs a new function's first calls unoptimised and swaps in optimised code after
 * some hundreds of ms of calls; camera's capture through the invoker, called back to back in a
 * fresh process, took 14-15 ms for its first 16 calls (~290 ms) and 6.4-7.4 ms from then on. A
 * deployed runner runs the optimised code after its first items, so short calls are timed until
 * past that, by the CPU they took: under a 0.5-CPU quota the same calls take twice the wall time.
 */
export const JS_REPEATS: RepeatPolicy = { ...REPEATS, shortMax: 50, shortBudgetSec: 0.5, budgetOf: 'cpu' };

/** Whether to time the call again after `n` timed calls that took `spent` s in all. */
export function timeAgain(n: number, spent: number, p: RepeatPolicy = REPEATS): boolean {
  return n < p.min || (n < p.max && spent < p.budgetSec) || (n < p.shortMax && spent < p.shortBudgetSec);
}

export interface TimedCall {
  /** Seconds, µs resolution. */
  durationSec: number;
  /** The outputs of the last call. */
  outs: string[];
}

/**
 * Wall time of the task's call and its outputs. A first call pays once what a deployed runner pays
 * once (JIT compilation, caches, lazy imports: a cold JS call on a 1 MiB frame took 30x its steady
 * time), so a call under REPEAT_UNDER_SEC is a warm-up and the fastest of the calls after it
 * counts; a slow task is timed once. The fastest, not the median: the input is the same every
 * time, so what varies is interference, all of it upward — V8 still tiering a JS task up (camera's
 * detect: 19, 7.5, 15, 8.4 ms after a 42 ms first call), a container's CPU quota run out by calls
 * back to back (a 20 ms dummy task on a 0.5-CPU testbed host: 31-46 ms as the median of two, 22-24
 * ms in a deployed runner), the other nodes' work — and an item in a deployed runner meets none of
 * that alone.
 */
export async function timeCalls(call: () => Promise<string[]>, policy: RepeatPolicy = REPEATS): Promise<TimedCall> {
  let outs: string[] = [];
  const time = async (): Promise<number> => {
    const t0 = performance.now();
    outs = await call();
    return (performance.now() - t0) / 1000;
  };
  const first = await time();
  if (first >= REPEAT_UNDER_SEC) return { durationSec: Math.round(first * 1e6) / 1e6, outs };
  const timed: number[] = [];
  let spent = 0;
  const cpu0 = process.cpuUsage();
  while (timeAgain(timed.length, spent, policy)) {
    const t = await time();
    timed.push(t);
    if (policy.budgetOf === 'wall') spent += t;
    else {
      const c = process.cpuUsage(cpu0);
      spent = (c.user + c.system) / 1e6;
    }
  }
  return { durationSec: Math.round(Math.min(...timed) * 1e6) / 1e6, outs };
}
