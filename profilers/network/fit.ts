// DRUPE's link model, fitted robustly: transfer seconds = a*bytes^2 + b*bytes + c.
// DRUPE fitted ms against Kbit with plain numpy.polyfit; we fit seconds against bytes, and:
//  - take the median time per probe size first, so one slow probe (a GC pause, a busy core)
//    cannot bend the curve;
//  - weight each size by 1/time^2 (least squares on relative error). Probe sizes span four
//    orders of magnitude; unweighted, the 10 MB probes swamp the 1 KB ones and the intercept
//    (latency) comes out as noise or even negative;
//  - solve on sizes scaled to [0, 1] and fall back to a line when the quadratic is
//    ill-conditioned (fewer than 3 sizes) or not physical (negative latency, time falling
//    with size), and to a clamped line as the last resort. Bandwidth is never negative.

export interface LinkSample {
  bytes: number;
  seconds: number;
  /** ms since epoch */
  at: number;
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

function median(v: number[]): number {
  const s = [...v].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Solve the weighted normal equations for a polynomial of the given degree (x already scaled). */
function polyfit(points: Point[], degree: number): { coef: number[]; cond: number } | undefined {
  const n = degree + 1;
  const m: number[][] = Array.from({ length: n }, () => new Array<number>(n + 1).fill(0));
  for (const { x, y, w } of points) {
    const pow = Array.from({ length: n }, (_, k) => x ** k);
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) m[i]![j]! += w * pow[i]! * pow[j]!;
      m[i]![n]! += w * pow[i]! * y;
    }
  }
  // Gaussian elimination with partial pivoting; the ratio of the largest to the smallest pivot
  // is a cheap condition estimate that is good enough to refuse a degenerate system.
  let maxPivot = 0;
  let minPivot = Infinity;
  for (let col = 0; col < n; col++) {
    let best = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[best]![col]!)) best = r;
    [m[col], m[best]] = [m[best]!, m[col]!];
    const pivot = m[col]![col]!;
    maxPivot = Math.max(maxPivot, Math.abs(pivot));
    minPivot = Math.min(minPivot, Math.abs(pivot));
    if (!Number.isFinite(pivot) || pivot === 0) return undefined;
    for (let r = col + 1; r < n; r++) {
      const f = m[r]![col]! / pivot;
      for (let k = col; k <= n; k++) m[r]![k]! -= f * m[col]![k]!;
    }
  }
  const coef = new Array<number>(n).fill(0);
  for (let i = n - 1; i >= 0; i--) {
    let s = m[i]![n]!;
    for (let k = i + 1; k < n; k++) s -= m[i]![k]! * coef[k]!;
    coef[i] = s / m[i]![i]!;
  }
  if (!coef.every(Number.isFinite)) return undefined;
  return { coef, cond: maxPivot / minPivot };
}

const MAX_COND = 1e10;

function finish(a: number, b: number, c: number, model: FitModel, xmax: number, samples: number, sizes: number): LinkFit {
  // Bandwidth as seen by a large transfer: the largest probe's size over its time minus latency.
  const latencySec = Math.max(0, c);
  const transfer = a * xmax * xmax + b * xmax;
  const bandwidthBytesPerSec = transfer > xmax / MAX_BANDWIDTH ? Math.min(MAX_BANDWIDTH, xmax / transfer) : MAX_BANDWIDTH;
  return { a, b, c, latencySec, bandwidthBytesPerSec, model, samples, sizes };
}

/** Fit the link model to probe samples; undefined until there are MIN_SAMPLES samples of at least 2 sizes. */
export function fitLink(samples: LinkSample[]): LinkFit | undefined {
  const good = samples.filter((s) => s.bytes > 0 && Number.isFinite(s.seconds) && s.seconds > 0);
  const bySize = new Map<number, number[]>();
  for (const s of good) bySize.set(s.bytes, [...(bySize.get(s.bytes) ?? []), s.seconds]);
  if (good.length < MIN_SAMPLES || bySize.size < 2) return undefined;
  const xmax = Math.max(...bySize.keys());
  const points: Point[] = [...bySize].map(([bytes, times]) => {
    const y = median(times);
    return { x: bytes / xmax, y, w: times.length / (y * y) };
  });
  const n = good.length;
  const sizes = bySize.size;
  const monotone = (a: number, b: number) => b >= 0 && b + 2 * a >= 0; // derivative on [0, 1] (scaled)

  if (sizes >= 3) {
    const q = polyfit(points, 2);
    if (q && q.cond < MAX_COND) {
      const [c, b, a] = q.coef as [number, number, number];
      if (c >= 0 && monotone(a, b)) return finish(a / (xmax * xmax), b / xmax, c, 'quadratic', xmax, n, sizes);
    }
  }
  const l = polyfit(points, 1);
  if (l && l.cond < MAX_COND) {
    const [c, b] = l.coef as [number, number];
    if (c >= 0 && b > 0) return finish(0, b / xmax, c, 'linear', xmax, n, sizes);
  }
  // Last resort: latency from the smallest probe, bandwidth from the largest.
  const sorted = [...points].sort((p, q) => p.x - q.x);
  const lo = sorted[0]!;
  const hi = sorted[sorted.length - 1]!;
  const c = Math.max(0, Math.min(lo.y, hi.y));
  const b = Math.max((hi.y - c) / (hi.x - lo.x || 1), 0) / xmax;
  return finish(0, b, c, 'clamped', xmax, n, sizes);
}

/** Predicted transfer seconds for a volume under a fit. */
export function predictSeconds(fit: { a: number; b: number; c: number }, bytes: number): number {
  return fit.a * bytes * bytes + fit.b * bytes + fit.c;
}
