// Which probe samples a link's fit may use: the profile must follow the network it describes.
// The fit (fit.ts) is robust against slow outliers (the fastest of each size's newest three), so
// fast samples taken before a link was throttled outvote the new slow ones until three of each
// size have come, which for a large probe the budget affords rarely can take minutes. Two rules keep the window honest, both pure functions of the samples (so an agent that
// restarts, or any reader, comes to the same answer):
//  - change detection: the newest samples are compared with the older ones of the same size; when two
//    of the newest three (the newest among them) deviate in the same direction by a factor >=
//    CHANGE_RATIO (and by more than timer noise), the link changed at the first deviating sample
//    and everything older is dropped. A newest sample that deviates alone makes the link
//    `suspect`: the profiler re-probes that size at once, so one more sample confirms or clears
//    it (a budget that only affords rare probes must not delay detection, and one GC pause must
//    not throw the history away);
//  - age-out: samples older than maxAgeMs are dropped as long as enough newer ones remain for a
//    fit, so a slow drift is followed too.
import { MIN_SAMPLES, type LinkSample } from './fit.js';

export interface WindowOptions {
  /** Samples older than this are dropped when enough newer ones remain (default 20 min). */
  maxAgeMs: number;
  /** Now, ms since epoch (a parameter so the function stays pure). */
  now: number;
}

export interface LinkWindow {
  /** The samples the fit should use, newest first. */
  samples: LinkSample[];
  /** Set when a change was detected: time of the first sample of the new regime. */
  changeAt?: number;
  /** Direction of the detected change. */
  direction?: 'slower' | 'faster';
  /** The newest sample deviates but nothing confirms it yet: probe that size again. */
  suspect?: boolean;
}

export const DEFAULT_MAX_AGE_MS = 20 * 60_000;
/** A sample deviates when it is this many times slower than the upper quartile of the older samples of its size (or faster than the fastest)... */
export const CHANGE_RATIO = 2;
/**
 * ...and differs by at least this much. Probe noise is additive and one-sided (a delayed ACK
 * adds 40 ms, a busy core more); a rate change adds time in proportion to size. So a change
 * counts once it moves some probe size by 100 ms: small probes never raise it, and a change at
 * rates so high that no probe size moves that much waits for the age-out.
 */
export const MIN_DEVIATION_SEC = 0.1;
/**
 * Noise never makes a probe faster, so a sample twice as fast as the fastest older one of its
 * size is evidence on its own; only timer resolution asks for a floor.
 */
export const MIN_SPEEDUP_SEC = 0.005;

type Deviation = 'slower' | 'faster' | undefined;

const valid = (s: LinkSample): boolean => s.bytes > 0 && Number.isFinite(s.seconds) && s.seconds > 0 && Number.isFinite(s.at);

function fittable(samples: LinkSample[]): boolean {
  return samples.length >= MIN_SAMPLES && new Set(samples.map((s) => s.bytes)).size >= 2;
}

/**
 * How a sample compares with the older samples of its size: slower than CHANGE_RATIO times their
 * upper quartile (and by MIN_DEVIATION_SEC), or faster than the fastest over CHANGE_RATIO (and
 * by MIN_SPEEDUP_SEC).
 * Against its own size's spread, not the fit: probe noise is one-sided and heavy (a delayed ACK
 * adds 40 ms to a 4 ms probe), so a sample the optimistic fit calls 10x slow can be ordinary.
 */
function deviation(s: LinkSample, older: LinkSample[]): Deviation {
  const same = older.filter((o) => o.bytes === s.bytes).map((o) => o.seconds);
  // Too little history of that size (the bootstrap's first round, just after a cut) says
  // nothing about its noise: no verdict.
  if (same.length < 2) return undefined;
  // The slow reference is the upper quartile, not the maximum: over 50 samples the maximum is
  // one rare stall, and comparing with it would make detection duller the longer a link lives.
  const sorted = [...same].sort((a, b) => a - b);
  const hi = sorted[Math.floor(0.75 * (sorted.length - 1))]!;
  const lo = sorted[0]!;
  if (s.seconds >= hi * CHANGE_RATIO && s.seconds - hi >= MIN_DEVIATION_SEC) return 'slower';
  // A timed-out probe (censored) is only a lower bound on its time: never evidence of speed.
  if (!s.censored && s.seconds * CHANGE_RATIO <= lo && lo - s.seconds >= MIN_SPEEDUP_SEC) return 'faster';
  return undefined;
}

/** Detect a regime change among the newest samples (newest first). */
function detectChange(newestFirst: LinkSample[]): Pick<LinkWindow, 'changeAt' | 'direction' | 'suspect'> {
  const head = newestFirst.slice(0, 3);
  const older = newestFirst.slice(3);
  if (head.length === 0 || !fittable(older)) return {};
  const devs = head.map((s) => deviation(s, older));
  const dir = devs[0];
  if (!dir) return {};
  // Two of three: the oldest of the deviating ones starts the new regime. The newest must be
  // among them, so a deviation followed by normal samples (a pause, then recovery) is no change.
  const hits = head.filter((_, i) => devs[i] === dir);
  if (hits.length >= 2) return { changeAt: Math.min(...hits.map((s) => s.at)), direction: dir };
  return { suspect: true };
}

/** The samples a link's fit should use now (see the header). Input in any order. */
export function linkWindow(samples: LinkSample[], opts: WindowOptions): LinkWindow {
  let list = samples.filter(valid).sort((p, q) => q.at - p.at);
  const change = detectChange(list);
  if (change.changeAt !== undefined) list = list.filter((s) => s.at >= change.changeAt!);
  const fresh = list.filter((s) => opts.now - s.at <= opts.maxAgeMs);
  if (fresh.length < list.length && fittable(fresh)) list = fresh;
  return { samples: list, ...change };
}
