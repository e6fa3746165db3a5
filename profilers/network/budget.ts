// Probe traffic at a bounded cost: the steady-state probes of a directed link carry at most
// `fraction` of that link's measured capacity, averaged over probe and pause. Pure functions;
// the profiler (profiler.ts) asks them when to send the next probe and which sizes it can afford.
// A link that slows down is re-fitted within a probe or two (window.ts, and the profiler's
// immediate re-probes), and the budget follows the new fit.

export { DEFAULT_PROBE_BUDGET } from '../../config/types.js';

/**
 * Capacity the budget is taken from, bytes/s: the link's fitted bandwidth; before the first fit,
 * what the probe saw. (Not the lower of the two: a small probe's throughput is its latency, and
 * budgeting by it would allow only small probes, which then again see only latency.)
 */
export function budgetCapacity(fitBandwidth: number | undefined, bytes: number, seconds: number): number {
  if (fitBandwidth !== undefined && fitBandwidth > 0) return fitBandwidth;
  return seconds > 0 ? bytes / seconds : 1e12;
}

/** Pause after a probe of `bytes` that took `seconds`, so probe bytes / (probe + pause) <= fraction * capacity. */
export function budgetPauseMs(bytes: number, seconds: number, capacity: number, fraction: number): number {
  return Math.max(0, (bytes / (fraction * capacity) - seconds) * 1000);
}

/** A size is affordable while its budgeted cycle is at most this many probe intervals. */
export const AFFORDABLE_INTERVALS = 3;

/**
 * Probe sizes whose budgeted cycle (probe + pause) is at most AFFORDABLE_INTERVALS x
 * `intervalMs`, so the link is still probed about that often on average and large probes (the
 * ones that see the bandwidth) stay in the mix; when none is, the smallest size alone (probed
 * less often, still within budget).
 */
export function affordableSizes(sizes: number[], capacity: number, fraction: number, intervalMs: number): number[] {
  const ok = sizes.filter((s) => (s / (fraction * capacity)) * 1000 <= AFFORDABLE_INTERVALS * intervalMs);
  return ok.length > 0 ? ok : [Math.min(...sizes)];
}

/**
 * The largest size is the only one that sees the bandwidth (smaller ones mostly see latency and
 * the bucket's burst), yet on slow links the budget affords it least. When it is not among the
 * affordable sizes, the budget is split: LARGEST_SHARE of it pays for the largest size, drawn on
 * its own schedule (largestDue) with no pause after it, and the rest paces the affordable sizes
 * as usual. So the bandwidth of every link is re-measured (every ~55 s on 30 Mbit/s with 1 MB
 * probes and a 2% budget), while the link is still probed every few seconds (the others keep 3/4
 * of the budget: a cut is seen about as fast as before) and the total stays within the budget.
 */
export const LARGEST_SHARE = 0.25;

/** Whether the largest size is drawn on its own schedule, and the budget share left for the others. */
export function budgetSplit(sizes: number[], capacity: number, fraction: number, intervalMs: number): { largestForced: boolean; fraction: number } {
  const largest = Math.max(...sizes);
  const forced = !affordableSizes(sizes, capacity, fraction, intervalMs).includes(largest);
  return { largestForced: forced, fraction: forced ? fraction * (1 - LARGEST_SHARE) : fraction };
}

/** Whether a forced probe of the largest size is due, `sinceMs` after its last probe. */
export function largestDue(largest: number, capacity: number, fraction: number, sinceMs: number): boolean {
  return sinceMs >= (largest / (fraction * LARGEST_SHARE * capacity)) * 1000;
}
