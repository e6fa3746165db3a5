// One node of a machine times its task calls at a time (profilers/exec). Deploy asks every node to
// profile the app at the same moment; where several nodes share a machine (the testbed's emulated
// hosts, the embedded default's local nodes), each timed call then competes with the others' for
// the cores, and the profile records the machine's load rather than the task: camera's detect, 7-8
// ms in a deployed runner, was profiled at 5.7-19.6 ms across the seven hosts of one 2-core
// machine, and the mapper placed the app by that noise. A turn is a lock in the Redis the agents
// share, one per machine (its kernel's boot id), held around one task's calls. It expires by
// itself, so a killed agent holds no turn for long, and a node that waited `maxWaitMs` times its
// calls anyway: a slower profile with noise in it beats none.
// Not used for the overhead probes (profilers/overhead): probed in turns, their idle figures
// (hops of 1.0-1.4 ms) priced camera's 1 MiB hops, which took 7-9 ms among the runners, at 3 ms.
import type { Redis } from 'ioredis';

/** Runs `fn` in this node's turn on its machine; resolves to what `fn` resolves to. */
export type Turn = <T>(fn: () => Promise<T>) => Promise<T>;

/** No turns: `fn` at once (a node alone on its machine, or no Redis to share turns through). */
export const atOnce: Turn = (fn) => fn();

export interface MachineTurnOptions {
  /** How long a turn may be held before it expires (ms; default 30 s: a task timed once may be slow). */
  ttlMs?: number;
  /** How long to wait for a turn before timing anyway (ms; default 60 s). */
  maxWaitMs?: number;
  /** Between asks for a turn (ms; default 5). */
  pollMs?: number;
}

// Delete the key only if we still own it (an expired turn taken by another node stays theirs).
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Turns on the machine whose lock is `key`, taken as `owner` (unique per node and request). */
export function machineTurn(redis: Redis, key: string, owner: string, opts: MachineTurnOptions = {}): Turn {
  const ttlMs = opts.ttlMs ?? 30_000;
  const maxWaitMs = opts.maxWaitMs ?? 60_000;
  const pollMs = opts.pollMs ?? 5;
  const take = async (): Promise<boolean> => {
    const since = Date.now();
    for (;;) {
      try {
        if ((await redis.set(key, owner, 'PX', ttlMs, 'NX')) === 'OK') return true;
      } catch {
        // Without Redis the profile cannot be stored anyway: time without a turn.
        return false;
      }
      if (Date.now() - since >= maxWaitMs) return false;
      await sleep(pollMs);
    }
  };
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    const held = await take();
    try {
      return await fn();
    } finally {
      if (held) await redis.eval(RELEASE, 1, key, owner).catch(() => undefined);
    }
  };
}
