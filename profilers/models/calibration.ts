// Task times as the runners saw them, kept for the next deploy of the app. The one-shot execution
// profile (profilers/exec) times a task's calls back to back in a quiet process of the agent, on the
// sample input; a deployed runner calls it once per item, between its own work on the item's bytes,
// in its own container. On the edge-fog-cloud testbed camera's tasks took 1.1-2.7x their profiles
// per isolated item (capture 6.7-10.7 ms against 3.8-4.9 in a loaded run), always above, so the
// mapper placed and priced the app on times it never ran at. A deployment's runtime records (orchestrator/adapt/records.ts)
// say what its tasks took; when it is removed, each task keeps the ratio of those times to its
// profile on the node that ran it, and the next deploy scales the task's profile on every node by
// it. Pure functions, no I/O.
import type { ExecProfile, ProfileSnapshot } from '../../config/types.js';
import type { ExecRecord } from './exec-model.js';
import { median } from '../overhead/median.js';

/** What one task's runs took against its profile, in the deployments that ran it. */
export interface TaskCalibration {
  /** The median of the runs' times over the profiles of their nodes. */
  ratio: number;
  /** Runs it comes from. */
  n: number;
  /** The profiles' inputsHash (profilers/exec/inputs-hash.ts): a changed task is profiled, and judged, anew. */
  inputsHash?: string;
  /** When it was computed, ms since epoch. */
  at: number;
}

/** Per task name. */
export type AppCalibration = Record<string, TaskCalibration>;

/** Fewer runs of a task than this say nothing yet: its profile stands as it is. */
export const MIN_CALIBRATION_RUNS = 5;
/** Ratios are held within these: a task that stalled on its first items must not price it 100x. */
export const CALIBRATION_BOUNDS: readonly [number, number] = [0.2, 5];

/**
 * Each task's calibration from its runs (`records`) and the profiles of `app` in `snapshot` (the
 * raw ones, not scaled by an earlier calibration). A run on a node without a profile of the task
 * counts for nothing; a task with fewer than MIN_CALIBRATION_RUNS runs gets none. The ratio is the
 * runs' median, not a lower quantile, though the mapper prices an isolated item and a stream's runs
 * include items that queued behind others on a host with a CPU quota: on the testbed camera's items
 * sent 100 ms apart took longer per task than those sent back to back (on fog1 48.5 against 41 ms an
 * item), and the lower quartile of the runs priced its tasks 1.1-1.6x below what the isolated items
 * then took.
 */
export function calibrationOf(records: ExecRecord[], snapshot: ProfileSnapshot, app: string, now: number): AppCalibration {
  const profile = new Map<string, ExecProfile>();
  for (const e of snapshot.exec) if (e.app === app && e.durationSec > 0) profile.set(`${e.task}\u0000${e.node}`, e);
  const ratios = new Map<string, { r: number[]; hash?: string }>();
  for (const rec of records) {
    const p = profile.get(`${rec.task}\u0000${rec.node}`);
    if (!p || !(rec.seconds >= 0) || !Number.isFinite(rec.seconds)) continue;
    const t = ratios.get(rec.task) ?? { r: [], hash: p.inputsHash };
    t.r.push(rec.seconds / p.durationSec);
    ratios.set(rec.task, t);
  }
  const out: AppCalibration = {};
  for (const [task, { r, hash }] of ratios) {
    if (r.length < MIN_CALIBRATION_RUNS) continue;
    const ratio = Math.min(CALIBRATION_BOUNDS[1], Math.max(CALIBRATION_BOUNDS[0], median(r)));
    out[task] = { ratio, n: r.length, at: now, ...(hash !== undefined ? { inputsHash: hash } : {}) };
  }
  return out;
}

/** The newer evidence per task: a task the latest deployment ran too little keeps what it had. */
export function mergeCalibrations(kept: AppCalibration, latest: AppCalibration): AppCalibration {
  return { ...kept, ...latest };
}

/**
 * `snapshot` with every profile of `app` scaled by its task's calibration, and what was applied.
 * A calibration whose inputsHash differs from the task's profiles (the task or something upstream
 * changed since) is passed over.
 */
export function calibrateExecProfiles(snapshot: ProfileSnapshot, app: string, cal: AppCalibration): { snapshot: ProfileSnapshot; applied: Array<{ task: string } & TaskCalibration> } {
  const usable = new Map<string, TaskCalibration>();
  for (const [task, c] of Object.entries(cal)) {
    const mine = snapshot.exec.filter((e) => e.app === app && e.task === task);
    if (mine.length === 0 || !(c.ratio > 0)) continue;
    if (c.inputsHash !== undefined && mine.some((e) => e.inputsHash !== undefined && e.inputsHash !== c.inputsHash)) continue;
    usable.set(task, c);
  }
  if (usable.size === 0) return { snapshot, applied: [] };
  const exec = snapshot.exec.map((e) => {
    const c = e.app === app ? usable.get(e.task) : undefined;
    return c ? { ...e, durationSec: e.durationSec * c.ratio } : e;
  });
  return { snapshot: { ...snapshot, exec }, applied: [...usable].map(([task, c]) => ({ task, ...c })) };
}
