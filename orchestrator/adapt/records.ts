// Runtime records of an app's recent items as execution records for the online models
// (profilers/models/exec-model.ts). Runners write them per item in `rt:<item>` (circe/queue/keys.ts):
// `<task>|start`, `|finish` (ms), `|node`, `|in` (input bytes).
import type { Redis } from 'ioredis';
import { appKeys } from '../../circe/queue/keys.js';
import { DEFAULT_PREFIX } from '../../config/redis-keys.js';
import { DEFAULT_MODEL_MAX_AGE_MS, DEFAULT_MODEL_WINDOW, type ExecRecord } from '../../profilers/models/exec-model.js';

/** The task runs recorded in one item's runtime hash. */
export function execRecordsOf(rt: Record<string, string>): ExecRecord[] {
  const tasks = new Set(Object.keys(rt).map((f) => f.slice(0, f.lastIndexOf('|'))));
  const out: ExecRecord[] = [];
  for (const task of tasks) {
    const start = Number(rt[`${task}|start`]);
    const finish = Number(rt[`${task}|finish`]);
    const node = rt[`${task}|node`];
    if (!node || !Number.isFinite(start) || !Number.isFinite(finish) || finish < start) continue;
    const inBytes = Number(rt[`${task}|in`] ?? 0);
    out.push({ task, node, inBytes: Number.isFinite(inBytes) ? inBytes : 0, seconds: (finish - start) / 1000, at: finish });
  }
  return out;
}

/** Execution records of the newest `items` items of an app. */
export async function readExecRecords(redis: Redis, app: string, opts: { prefix?: string; items?: number } = {}): Promise<ExecRecord[]> {
  const k = appKeys(opts.prefix ?? DEFAULT_PREFIX, app);
  const ids = await redis.zrange(k.items, String(-(opts.items ?? 200)), '-1');
  if (ids.length === 0) return [];
  const res = (await redis.pipeline(ids.map((id) => ['hgetall', k.rt(id)])).exec()) ?? [];
  return res.flatMap(([, v]) => execRecordsOf((v ?? {}) as Record<string, string>));
}

/**
 * The records a check keeps for the next one: what it had plus what it read, per (task, node) the
 * newest `window` not older than `maxAgeMs`. The newest items only show where tasks run now: once
 * a task left a slow node, that node's records fall out of them within a few hundred items, its
 * model falls back to the one-shot profile (fast), and the task would be moved back onto the slow
 * node, again and again. Kept, the evidence stays until it ages out like any other.
 */
export function keepRecords(kept: ExecRecord[], fresh: ExecRecord[], opts: { now: number; window?: number; maxAgeMs?: number }): ExecRecord[] {
  const window = opts.window ?? DEFAULT_MODEL_WINDOW;
  const maxAge = opts.maxAgeMs ?? DEFAULT_MODEL_MAX_AGE_MS;
  const groups = new Map<string, Map<string, ExecRecord>>();
  for (const r of [...kept, ...fresh]) {
    if (opts.now - r.at > maxAge) continue;
    const g = `${r.task}\u0000${r.node}`;
    const group = groups.get(g) ?? new Map<string, ExecRecord>();
    group.set(`${r.at}\u0000${r.seconds}\u0000${r.inBytes}`, r);
    groups.set(g, group);
  }
  return [...groups.values()].flatMap((g) => [...g.values()].sort((a, b) => b.at - a.at).slice(0, window));
}
