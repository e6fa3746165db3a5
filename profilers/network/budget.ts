// Probe traffic at a bounded cost: the steady-state probes of a directed link carry at most
// `fraction` of that link's measured capacity, averaged over probe and pause. Pure functions;
// the profiler (profiler.ts) asks them when to send the next probe and which sizes it can afford.
// A link that slows down is re-fitted within a probe or two (window.ts, and the profiler's
// immediate re-probes), and the budget follows the new fit. A fit held low by a slow sample of the
// largest size (the host was busy) is re-probed soon on the other sizes' evidence (staleEvidence).

import type { LinkSample } from './fit.js';

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

/**
 * Evidence that a fit is stale (staleEvidence) comes only from sizes of 1/EVIDENCE_SPAN of the
 * largest and up, yet a fit held very low affords none of those either. Seen in CI: a 20 Mbit/s
 * link fitted at 3.3 Mbit/s after loaded bootstrap probes of 500 KB and 1 MB; at the 2% budget
 * only its 10 KB probes were affordable, which cannot count, and the next 1 MB probe was due after
 * ~480 s. Then EVIDENCE_SHARE of the budget, taken from the other sizes' share, pays for the
 * smallest size that counts as evidence, drawn on its own schedule like the largest, until a
 * steady probe of the largest has checked the fit (`unchecked`: none since the bootstrap or the
 * link's last change). Only until then: on a link with a token bucket those probes pass partly in
 * the burst and pull the fit up (a 1 Mbit/s link with a 10 KB burst fitted at 1.56 with 100 KB
 * probes in the mix), and a fit a steady largest probe has seen needs no evidence.
 */
export const EVIDENCE_SHARE = 0.125;

export interface BudgetSplit {
  /** The largest size is drawn on its own schedule (largestDue). */
  largestForced: boolean;
  /** The budget share left for the affordable sizes. */
  fraction: number;
  /** A size drawn on its own schedule for evidence (evidenceDue), when no affordable size counts as evidence. */
  evidenceSize?: number;
}

/** Whether the largest size (and an evidence size) is drawn on its own schedule, and the budget share left for the others. */
export function budgetSplit(sizes: number[], capacity: number, fraction: number, intervalMs: number, unchecked = false): BudgetSplit {
  const largest = Math.max(...sizes);
  const forced = !affordableSizes(sizes, capacity, fraction, intervalMs).includes(largest);
  if (!forced) return { largestForced: false, fraction };
  const others = fraction * (1 - LARGEST_SHARE);
  const counts = (s: number): boolean => isEvidenceSize(s, largest);
  const evidence = sizes.filter(counts);
  if (!unchecked || evidence.length === 0 || affordableSizes(sizes, capacity, others, intervalMs).some(counts)) return { largestForced: true, fraction: others };
  return { largestForced: true, fraction: fraction * (1 - LARGEST_SHARE - EVIDENCE_SHARE), evidenceSize: Math.min(...evidence) };
}

/** Whether a probe of the evidence size is due, `sinceMs` after the last probe of a size that counts: on an EVIDENCE_SHARE of the budget of `capacity`. */
export function evidenceDue(size: number, capacity: number, fraction: number, sinceMs: number): boolean {
  return sinceMs >= (size / (fraction * EVIDENCE_SHARE * capacity)) * 1000;
}

/** Whether a probe of `bytes` counts as evidence against a fit (staleEvidence) where `largest` is the largest size. */
export function isEvidenceSize(bytes: number, largest: number): boolean {
  return bytes < largest && bytes * EVIDENCE_SPAN >= largest;
}

/**
 * A fit held low also delays its own correction: the largest size's schedule is taken from the
 * fit, and only the largest size can raise it. Seen in CI: both 1 MB bootstrap probes of a
 * 30 Mbit/s link ran while the machine was loaded (1 MB in 1.15 s), the fit said 6.6 Mbit/s, and
 * the next 1 MB probe was due after 248 s instead of 54 s, while the 100 KB probes every few
 * seconds ran at 45 Mbit/s. So the other sizes' probes since the last probe of the largest are
 * evidence: when one of them ran STALE_RATIO times faster than the fit's bandwidth, the largest
 * size is scheduled from that probe's rate instead (at most MAX_BOOST times sooner).
 * What keeps a link with a large token bucket (whose smaller probes pass partly or wholly in the
 * burst, faster than the link) from drawing large probes at the evidence's pace:
 *  - only sizes of at least 1/EVIDENCE_SPAN of the largest count (64 KB and up for 1 MB): the
 *    smallest may pass wholly in the burst (a 10 KB probe on a 1 Mbit/s link with a 10 KB burst
 *    runs at line rate), while a size x runs at most x / (x - burst) times the link's rate,
 *    below STALE_RATIO while the burst is under half of x (latency only slows a probe);
 *  - an early probe that finds the largest size no faster than CONFIRM_RATIO x the fit (or
 *    fails) is a miss, and each miss doubles the early interval (largestMisses), up to the
 *    regular one: where the evidence lies there are at most log2(MAX_BOOST) = 3 early probes,
 *    then the regular schedule until the link changes (window.ts) or its agent restarts.
 * So the budget holds on average: where the evidence is right the link is about as fast as it
 * says (and the other sizes are still paced by the low fit's budget, a fraction of the true
 * one); where it lies, a few extra probes once.
 */
export const STALE_RATIO = 2;
export const EVIDENCE_SPAN = 16;
export const MAX_BOOST = 8;
export const CONFIRM_RATIO = 1.5;

/**
 * Rate (bytes/s) the link showed since the last probe of the largest size: the fastest probe of
 * a size in [largest / EVIDENCE_SPAN, largest) newer than the newest sample of the largest; none
 * before the largest was probed. Probes only: a real transfer's size is no probe size, and a
 * timed-out probe is only a bound on its time.
 */
export function staleEvidence(samples: LinkSample[], largest: number): number | undefined {
  const probes = samples.filter((s) => !s.transfer && !s.censored && s.seconds > 0);
  const largestAt = Math.max(...probes.filter((s) => s.bytes === largest).map((s) => s.at));
  if (!Number.isFinite(largestAt)) return undefined;
  const rates = probes.filter((s) => s.at > largestAt && isEvidenceSize(s.bytes, largest)).map((s) => s.bytes / s.seconds);
  return rates.length > 0 ? Math.max(...rates) : undefined;
}

/**
 * Whether a forced probe of the largest size is due, `sinceMs` after its last probe: on its
 * regular schedule (a LARGEST_SHARE of the budget of `capacity`), or early when the `evidence`
 * (staleEvidence) says the fit is stale, backed off by `misses` (largestMisses).
 */
export function largestDue(largest: number, capacity: number, fraction: number, sinceMs: number, evidence?: number, misses = 0): { due: boolean; early: boolean } {
  const regularMs = (largest / (fraction * LARGEST_SHARE * capacity)) * 1000;
  if (sinceMs >= regularMs) return { due: true, early: false };
  if (evidence === undefined || evidence < STALE_RATIO * capacity) return { due: false, early: false };
  const earlyMs = ((regularMs * capacity) / Math.min(evidence, MAX_BOOST * capacity)) * 2 ** misses;
  const due = sinceMs >= earlyMs;
  return { due, early: due };
}

/** Misses after an early probe of the largest size (`fit`: the fit's bandwidth it was drawn against): reset when it confirms the evidence. */
export function largestMisses(misses: number, bytes: number, seconds: number, fit: number): number {
  return seconds > 0 && bytes / seconds >= CONFIRM_RATIO * fit ? 0 : misses + 1;
}
