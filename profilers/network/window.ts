// Which probe samples a link's fit may use: the profile must follow the network it describes.
// The fit (fit.ts) is robust against slow outliers (lower median per size), so a list of fast
// samples taken before a link was throttled outvotes the new slow ones for as long as they are
// kept. Two rules keep the window honest, both pure functions of the samples (so an agent that
// restarts, or any reader, comes to the same answer):
//  - change detection: the newest samples are compared with the fit of the older ones; when two
//    of the newest three deviate in the same direction by a factor >= CHANGE_RATIO (and by more
//    than timer noise), or the newest one deviates by STRONG_RATIO, the link changed at the first
//    deviating sample and everything older is dropped. A false alarm (a GC pause) heals itself:
//    the next normal samples deviate from the alarm's fit and cut it off again;
//  - age-out: samples older than maxAgeMs are dropped as long as enough newer ones remain for a
//    fit, so a slow drift is followed too.
import { MIN_SAMPLES, fitLink, predictSeconds, type LinkSample } from './fit.js';

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
}

export const DEFAULT_MAX_AGE_MS = 20 * 60_000;
/** A sample deviates when observed/predicted (or its inverse) reaches this... */
export const CHANGE_RATIO = 2;
/** ...and differs by at least this much (timer and scheduling noise on small probes). */
export const MIN_DEVIATION_SEC = 0.005;
/** One sample alone is enough when it deviates this much and by STRONG_DEVIATION_SEC. */
export const STRONG_RATIO = 4;
export const STRONG_DEVIATION_SEC = 0.05;

type Deviation = 'slower' | 'faster' | undefined;

function deviation(predicted: number, observed: number, ratio: number, minSec: number): Deviation {
  if (Math.abs(observed - predicted) < minSec) return undefined;
  if (observed >= predicted * ratio) return 'slower';
  if (observed * ratio <= predicted) return 'faster';
  return undefined;
}

const valid = (s: LinkSample): boolean => s.bytes > 0 && Number.isFinite(s.seconds) && s.seconds > 0 && Number.isFinite(s.at);

function fittable(samples: LinkSample[]): boolean {
  return samples.length >= MIN_SAMPLES && new Set(samples.map((s) => s.bytes)).size >= 2;
}

/** Detect a regime change among the newest samples (newest first). */
function detectChange(newestFirst: LinkSample[]): Pick<LinkWindow, 'changeAt' | 'direction'> {
  const head = newestFirst.slice(0, 3);
  const older = newestFirst.slice(3);
  if (head.length === 0) return {};
  const base = fittable(older) ? fitLink(older) : undefined;
  if (!base) return {};
  // Judge only sizes the base fit spans: a fit of a few small probes (just after a cut) says
  // little about a large one, and extrapolating would raise false alarms in a loop.
  const maxSize = Math.max(...older.map((s) => s.bytes));
  const judge = (s: LinkSample, ratio: number, minSec: number): Deviation =>
    s.bytes <= maxSize ? deviation(predictSeconds(base, s.bytes), s.seconds, ratio, minSec) : undefined;
  const devs = head.map((s) => judge(s, CHANGE_RATIO, MIN_DEVIATION_SEC));
  const newest = head[0]!;
  const strong = judge(newest, STRONG_RATIO, STRONG_DEVIATION_SEC);
  for (const dir of ['slower', 'faster'] as const) {
    const hits = head.filter((_, i) => devs[i] === dir);
    // Two of three: the oldest of the deviating ones starts the new regime. The newest counts
    // among them, so a deviation followed by normal samples (a pause, then recovery) is no change.
    if (hits.length >= 2 && devs[0] === dir) return { changeAt: Math.min(...hits.map((s) => s.at)), direction: dir };
    if (strong === dir) return { changeAt: newest.at, direction: dir };
  }
  return {};
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
