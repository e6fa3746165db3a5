// Probe traffic at a bounded cost: the steady-state probes of a directed link carry at most
// `fraction` of that link's measured capacity, averaged over probe and pause. Pure functions;
// the profiler (profiler.ts) asks them when to send the next probe and which sizes it can afford.
// Capacity is the lower of the fitted bandwidth and the throughput the last probe saw, so a link
// that just slowed down is not flooded while its fit catches up.

export { DEFAULT_PROBE_BUDGET } from '../../config/types.js';

/** Capacity the budget is taken from: bytes/s. */
export function budgetCapacity(fitBandwidth: number | undefined, bytes: number, seconds: number): number {
  const seen = seconds > 0 ? bytes / seconds : Infinity;
  const fit = fitBandwidth !== undefined && fitBandwidth > 0 ? fitBandwidth : Infinity;
  const cap = Math.min(seen, fit);
  return Number.isFinite(cap) ? cap : 1e12;
}

/** Pause after a probe of `bytes` that took `seconds`, so probe bytes / (probe + pause) <= fraction * capacity. */
export function budgetPauseMs(bytes: number, seconds: number, capacity: number, fraction: number): number {
  return Math.max(0, (bytes / (fraction * capacity) - seconds) * 1000);
}

/**
 * Probe sizes whose budgeted cycle fits in `intervalMs` (so the link is still probed about that
 * often); when none does, the smallest size alone (probed less often, still within budget).
 */
export function affordableSizes(sizes: number[], capacity: number, fraction: number, intervalMs: number): number[] {
  const ok = sizes.filter((s) => (s / (fraction * capacity)) * 1000 <= intervalMs);
  return ok.length > 0 ? ok : [Math.min(...sizes)];
}
