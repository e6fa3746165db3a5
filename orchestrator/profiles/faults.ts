// Lossy and dead links (or nodes) among the live agents: the recent echo-probe rounds of every
// directed link (profilers/faults/loss-prober.ts), pooled and localised (localise.ts).
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import { localise, type Fault, type PathObservation } from '../../profilers/faults/localise.js';
import { DEFAULT_LOSS_WINDOW_MS, pathObservations, type LossRound } from '../../profilers/faults/rounds.js';

export interface NetworkHealth {
  /** Pooled recent loss per directed link that has loss-probe rounds. */
  paths: PathObservation[];
  faults: Fault[];
}

/** `windowMs`: pool the rounds of this long (default DEFAULT_LOSS_WINDOW_MS, one minute). */
export async function readNetworkHealth(redis: Redis, keys: Keys, nodes: string[], now = Date.now(), windowMs = DEFAULT_LOSS_WINDOW_MS): Promise<NetworkHealth> {
  const pairs = nodes.flatMap((f) => nodes.filter((t) => t !== f).map((t) => ({ from: f, to: t })));
  if (pairs.length === 0) return { paths: [], faults: [] };
  const res = (await redis.pipeline(pairs.map((p) => ['lrange', keys.linkLoss(p.from, p.to), '0', '-1'])).exec()) ?? [];
  const rounds = pairs.map((p, i) => ({
    ...p,
    rounds: ((res[i]?.[1] ?? []) as string[]).flatMap((raw) => {
      try {
        return [JSON.parse(raw) as LossRound];
      } catch {
        return [];
      }
    }),
  }));
  const paths = pathObservations(rounds, now, windowMs);
  return { paths, faults: localise(paths) };
}
