// Online execution models (after Optimus: fit performance models to what jobs actually did):
// per task and node, execution seconds as a function of input bytes, fitted to the runtime
// records of live items, recent window only, with its error. They replace the one-shot
// execution profile (profilers/exec) as evidence accumulates. Pure functions, no I/O.
//
// Model: seconds = base + perByte * bytes, fitted by Theil-Sen (the median of the slopes between
// every two records, then the median intercept): live items carry stalls that have nothing to do
// with their size (a GC pause, a scheduling delay on a loaded machine), and by least squares one
// item of twelve held up 300 ms halves the fitted slope of a 4-ms/KB task (a CI run fitted 2.73
// ms/KB to one). Both coefficients >= 0 (a negative slope falls back to the mean); the window is
// the newest `window` records not older than `maxAgeMs`, so a node that got busy shifts its model
// within that many items.
// Error: root mean square of the residuals, relative to the mean time (0.1 = 10%).
// Blend with the profile: weight n / (n + priorWeight) on the model, so one record does not
// overrule the profile but ten nearly do.
import type { ExecProfile, ProfileSnapshot } from '../../config/types.js';
import { median } from '../overhead/median.js';

/** One task run on one item, from the runtime records (circe: `rt:<item>`). */
export interface ExecRecord {
  task: string;
  node: string;
  /** Input bytes of the run (0 when not recorded). */
  inBytes: number;
  seconds: number;
  /** When it finished, ms since epoch. */
  at: number;
}

export interface ExecModel {
  task: string;
  node: string;
  baseSec: number;
  perByteSec: number;
  /** Records in the window. */
  n: number;
  /** RMS residual / mean time. */
  relError: number;
  /** Mean input bytes in the window. */
  meanInBytes: number;
  /** Newest record, ms since epoch. */
  newestAt: number;
}

export interface ModelOptions {
  window?: number;
  maxAgeMs?: number;
  now?: number;
}

export const DEFAULT_MODEL_WINDOW = 30;
export const DEFAULT_MODEL_MAX_AGE_MS = 5 * 60_000;
/** Records worth as much as the one-shot profile. */
export const PRIOR_WEIGHT = 3;

function fitOne(recs: ExecRecord[]): Pick<ExecModel, 'baseSec' | 'perByteSec' | 'relError' | 'meanInBytes'> {
  const n = recs.length;
  const mx = recs.reduce((s, r) => s + r.inBytes, 0) / n;
  const my = recs.reduce((s, r) => s + r.seconds, 0) / n;
  const slopes: number[] = [];
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const dx = recs[j]!.inBytes - recs[i]!.inBytes;
      if (dx !== 0) slopes.push((recs[j]!.seconds - recs[i]!.seconds) / dx);
    }
  }
  let slope = slopes.length > 0 ? median(slopes) : 0;
  let base = median(recs.map((r) => r.seconds - slope * r.inBytes));
  if (slope < 0 || base < 0) {
    // Keep both non-negative: no slope (the mean), or a line through the origin.
    const through0 = recs.reduce((s, r) => s + r.inBytes * r.seconds, 0) / Math.max(1e-300, recs.reduce((s, r) => s + r.inBytes ** 2, 0));
    const sse = (b: number, k: number) => recs.reduce((s, r) => s + (b + k * r.inBytes - r.seconds) ** 2, 0);
    [base, slope] = slope > 0 && mx > 0 && sse(0, through0) < sse(my, 0) ? [0, through0] : [my, 0];
  }
  const rms = Math.sqrt(recs.reduce((s, r) => s + (base + slope * r.inBytes - r.seconds) ** 2, 0) / n);
  return { baseSec: base, perByteSec: slope, relError: my > 0 ? rms / my : 0, meanInBytes: mx };
}

/** Fit one model per (task, node) to the recent records. */
export function fitExecModels(records: ExecRecord[], opts: ModelOptions = {}): ExecModel[] {
  const window = opts.window ?? DEFAULT_MODEL_WINDOW;
  const maxAge = opts.maxAgeMs ?? DEFAULT_MODEL_MAX_AGE_MS;
  const now = opts.now ?? Math.max(0, ...records.map((r) => r.at));
  const groups = new Map<string, ExecRecord[]>();
  for (const r of records) {
    if (!(r.seconds >= 0) || !Number.isFinite(r.seconds) || now - r.at > maxAge) continue;
    const key = `${r.task}\u0000${r.node}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups.values()].map((list) => {
    const recent = list.sort((a, b) => b.at - a.at).slice(0, window);
    return { task: recent[0]!.task, node: recent[0]!.node, n: recent.length, newestAt: recent[0]!.at, ...fitOne(recent) };
  });
}

export function predictExec(m: Pick<ExecModel, 'baseSec' | 'perByteSec'>, inBytes: number): number {
  return m.baseSec + m.perByteSec * inBytes;
}

/**
 * The profile snapshot with each (task, node) execution time of `app` replaced by the blend of
 * its one-shot profile and its online model at the task's typical input size (the mean over
 * every node's window). A (task, node) with a model but no profile gets the model alone.
 */
export function blendExecProfiles(snapshot: ProfileSnapshot, app: string, models: ExecModel[], priorWeight = PRIOR_WEIGHT): ProfileSnapshot {
  const typical = new Map<string, number>();
  for (const task of new Set(models.map((m) => m.task))) {
    const ms = models.filter((m) => m.task === task);
    typical.set(task, ms.reduce((s, m) => s + m.meanInBytes * m.n, 0) / ms.reduce((s, m) => s + m.n, 0));
  }
  const byKey = new Map(models.map((m) => [`${m.task}\u0000${m.node}`, m]));
  const seen = new Set<string>();
  const exec: ExecProfile[] = snapshot.exec.map((e) => {
    const m = e.app === app ? byKey.get(`${e.task}\u0000${e.node}`) : undefined;
    if (!m) return e;
    seen.add(`${e.task}\u0000${e.node}`);
    const w = m.n / (m.n + priorWeight);
    return { ...e, durationSec: w * predictExec(m, typical.get(m.task)!) + (1 - w) * e.durationSec, updatedAt: Math.max(e.updatedAt, m.newestAt) };
  });
  // Output bytes of a model-only entry: the task's profiled output elsewhere (edges need it).
  for (const m of models) {
    if (seen.has(`${m.task}\u0000${m.node}`)) continue;
    const out = snapshot.exec.find((e) => e.app === app && e.task === m.task)?.outputBytes ?? 0;
    exec.push({ app, task: m.task, node: m.node, durationSec: predictExec(m, typical.get(m.task)!), outputBytes: out, updatedAt: m.newestAt });
  }
  return { ...snapshot, exec };
}
