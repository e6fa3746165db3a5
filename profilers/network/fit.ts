// DRUPE's link model, fitted robustly: transfer seconds = a*bytes^2 + b*bytes + c.
// DRUPE fitted ms against Kbit with plain numpy.polyfit; we fit seconds against bytes, and:
//  - take, per probe size, the fastest of its newest RECENT_PER_SIZE samples: probe noise only
//    ever adds time (a GC pause, a busy core, a delayed ACK), so the fastest recent probe is the
//    best estimate of the link as it is now, and slow probes cannot bend the curve however many
//    there are. Only the newest few count, so a size probed rarely (the largest, which alone sees
//    the bandwidth, is the one the budget affords least) is judged by its fresh probes: two slow
//    ones taken while the host was busy are outvoted by the first fast one after. (A lower median
//    over all samples needed as many fast probes as slow ones: on a 30 Mbit/s link, whose budget
//    allows one 1 MB probe every ~30 s, a busy start stuck the fit at 19 Mbit/s for minutes.)
//    A link that really slowed shows within RECENT_PER_SIZE probes of a size, and window.ts cuts
//    the history at once on a large change;
//  - weight each size by (samples used)/time: errors count in proportion to the transfer's duration. Plain
//    least squares (DRUPE) lets the largest probes alone decide the latency; relative error lets
//    the tiny probes (which a token bucket lets through at line rate) decide the bandwidth;
//  - solve a non-negative least squares problem (a, b, c >= 0) on sizes scaled to [0, 1], by
//    trying every subset of the three terms and keeping the best feasible, well-conditioned one.
//    So latency and bandwidth are never negative and time never falls with size.
export interface LinkSample {
  bytes: number;
  seconds: number;
  /** ms since epoch */
  at: number;
  /**
   * The probe timed out after `seconds`: the transfer takes at least that long. Fitted as if it
   * took exactly that (the optimistic bound), so a link that no probe gets through any more looks
   * as slow as it is at least, instead of keeping the fit of its better days.
   */
  censored?: boolean;
  /**
   * A real transfer of the data path (config/link-transfers.ts), not a probe: fitted like a probe
   * of its size, kept in its own list (the receiving side writes it), never re-probed.
   */
  transfer?: boolean;
}

export type FitModel = 'quadratic' | 'linear' | 'clamped';

export interface LinkFit {
  a: number;
  b: number;
  c: number;
  latencySec: number;
  bandwidthBytesPerSec: number;
  model: FitModel;
  samples: number;
  /** Distinct probe sizes among the samples. */
  sizes: number;
}

/** Largest bandwidth we report (1 TB/s): stands in for "too fast to measure". */
export const MAX_BANDWIDTH = 1e12;
/** Samples needed before a link counts as fitted. */
export const MIN_SAMPLES = 3;

interface Point {
  x: number;
  y: number;
  w: number;
}

/** Samples per size the fit uses: the newest ones (see the header). */
export const RECENT_PER_SIZE = 3;

const MAX_COND = 1e10;

/** Weighted least squares over the given powers of x (0 = c, 1 = b, 2 = a); undefined if singular. */
function solve(points: Point[], powers: number[]): { coef: number[]; sse: number } | undefined {
  const n = powers.length;
  const m: number[][] = Array.from({ length: n }, () => new Array<number>(n + 1).fill(0));
  for (const { x, y, w } of points) {
    const f = powers.map((k) => x ** k);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) m[i]![j]! += w * f[i]! * f[j]!;
      m[i]![n]! += w * f[i]! * y;
    }
  }
  // Gaussian elimination with partial pivoting; the ratio of the largest to the smallest pivot
  // is a cheap condition estimate, good enough to refuse a degenerate system.
  let maxPivot = 0;
  let minPivot = Infinity;
  for (let col = 0; col < n; col++) {
    let best = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[best]![col]!)) best = r;
    [m[col], m[best]] = [m[best]!, m[col]!];
    const pivot = m[col]![col]!;
    if (!Number.isFinite(pivot) || pivot === 0) return undefined;
    maxPivot = Math.max(maxPivot, Math.abs(pivot));
    minPivot = Math.min(minPivot, Math.abs(pivot));
    for (let r = col + 1; r < n; r++) {
      const f = m[r]![col]! / pivot;
      for (let k = col; k <= n; k++) m[r]![k]! -= f * m[col]![k]!;
    }
  }
  if (maxPivot / minPivot > MAX_COND) return undefined;
  const sol = new Array<number>(n).fill(0);
  for (let i = n - 1; i >= 0; i--) {
    let s = m[i]![n]!;
    for (let k = i + 1; k < n; k++) s -= m[i]![k]! * sol[k]!;
    sol[i] = s / m[i]![i]!;
  }
  const coef = [0, 0, 0];
  powers.forEach((k, i) => (coef[k] = sol[i]!));
  if (!coef.every(Number.isFinite)) return undefined;
  let sse = 0;
  for (const { x, y, w } of points) sse += w * (coef[0]! + coef[1]! * x + coef[2]! * x * x - y) ** 2;
  return { coef, sse };
}

// Subsets of {c, b, a}, simplest first so that an equally good simpler model wins ties.
const SUBSETS = [[0], [1], [2], [0, 1], [0, 2], [1, 2], [0, 1, 2]];

/** Fit the link model to probe samples; undefined until there are MIN_SAMPLES samples of at least 2 sizes. */
export function fitLink(samples: LinkSample[]): LinkFit | undefined {
  const good = samples.filter((s) => s.bytes > 0 && Number.isFinite(s.seconds) && s.seconds > 0);
  const bySize = new Map<number, LinkSample[]>();
  for (const s of good) bySize.set(s.bytes, [...(bySize.get(s.bytes) ?? []), s]);
  if (good.length < MIN_SAMPLES || bySize.size < 2) return undefined;
  const xmax = Math.max(...bySize.keys());
  const points: Point[] = [...bySize].map(([bytes, list]) => {
    const recent = [...list].sort((p, q) => q.at - p.at).slice(0, RECENT_PER_SIZE);
    const y = Math.min(...recent.map((s) => s.seconds));
    return { x: bytes / xmax, y, w: recent.length / y };
  });
  // A more complex model must be better by more than rounding noise to win.
  const tol = 1e-9 * points.reduce((s, p) => s + p.w * p.y * p.y, 0);
  let best: { coef: number[]; sse: number } | undefined;
  for (const powers of SUBSETS) {
    if (powers.length > points.length) continue;
    const r = solve(points, powers);
    if (!r || r.coef.some((v) => v < 0)) continue;
    if (!best || r.sse < best.sse - tol) best = r;
  }
  // The constant model alone is always feasible (c = weighted mean time > 0).
  const [c, bs, as] = best!.coef as [number, number, number];
  const a = as / (xmax * xmax);
  const b = bs / xmax;
  const model: FitModel = a > 0 ? 'quadratic' : b > 0 ? 'linear' : 'clamped';
  // Bandwidth as a large transfer sees it: the largest probe's size over its time minus latency.
  const transfer = a * xmax * xmax + b * xmax;
  const bandwidthBytesPerSec = transfer > xmax / MAX_BANDWIDTH ? xmax / transfer : MAX_BANDWIDTH;
  return { a, b, c, latencySec: c, bandwidthBytesPerSec, model, samples: good.length, sizes: bySize.size };
}

/** Predicted transfer seconds for a volume under a fit. */
export function predictSeconds(fit: { a: number; b: number; c: number }, bytes: number): number {
  return fit.a * bytes * bytes + fit.b * bytes + fit.c;
}
