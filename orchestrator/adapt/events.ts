// Every re-map, suggested or made, is an event with before, after and reason. It is stored in
// the app's capped list `app:<app>:remaps` (newest first); the telemetry bridge publishes the
// newest on `jupiter/<app>/remap` (retained), so a missing broker never holds up a decision.
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import type { RemapPlan } from './plan.js';

export interface RemapEvent {
  app: string;
  /** suggest: published only (adapt: suggest, or `jupiter remap` by hand); remap: tasks moved. */
  kind: 'suggest' | 'remap';
  /** What triggered it: manual, gain, lost-node. */
  trigger: 'manual' | 'gain' | 'lost-node';
  reason: string;
  mapper: string;
  before: { mapping: Record<string, string>; makespanSec: number | null };
  after: { mapping: Record<string, string>; makespanSec: number };
  /** Predicted makespan gain, fraction. */
  gain: number;
  moves: Array<{ task: string; from: string; to: string }>;
  ts: number;
}

export const REMAPS_KEPT = 50;

export function remapEvent(plan: RemapPlan, kind: RemapEvent['kind'], trigger: RemapEvent['trigger'], now = Date.now()): RemapEvent {
  return {
    app: plan.app,
    kind,
    trigger,
    reason: plan.reason,
    mapper: plan.mapper,
    before: { mapping: plan.before.mapping, makespanSec: Number.isFinite(plan.before.makespan) ? plan.before.makespan : null },
    after: { mapping: plan.after.mapping, makespanSec: plan.after.makespan },
    gain: plan.gain,
    moves: plan.moves,
    ts: now,
  };
}

export async function recordRemap(redis: Redis, keys: Keys, ev: RemapEvent): Promise<void> {
  const key = keys.remaps(ev.app);
  await redis.multi().lpush(key, JSON.stringify(ev)).ltrim(key, 0, REMAPS_KEPT - 1).exec();
}
