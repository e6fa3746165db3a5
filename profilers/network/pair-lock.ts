// One bandwidth probe at a time between two hosts, whichever direction. A probe saturates its
// link; when the peer probes back at the same time, each transfer's ACKs (and the peer's answer)
// queue behind the other's data on the shared path, and both read 10-25% low (measured on the
// testbed's htb links: 19.1 Mbit/s alone, 14-17 Mbit/s with the reverse probe running). Real
// traffic between two nodes is rarely a pair of saturating opposite streams, so the profile
// should describe one direction at a time. The lock lives in the Redis every agent already
// shares; it expires by itself, so a killed agent cannot hold a pair for longer than one probe.
import type { Redis } from 'ioredis';

// Delete the key only if we still own it (an expired lock taken over by the peer stays).
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";

/** Take the pair's lock for up to ttlMs; false if the peer holds it. A Redis error lets the probe go ahead. */
export async function lockPair(redis: Redis, key: string, owner: string, ttlMs: number): Promise<boolean> {
  try {
    return (await redis.set(key, owner, 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
  } catch {
    // Without Redis the profile cannot be published anyway; probing unlocked loses nothing.
    return true;
  }
}

export async function unlockPair(redis: Redis, key: string, owner: string): Promise<void> {
  try {
    await redis.eval(RELEASE, 1, key, owner);
  } catch {
    // It expires by itself.
  }
}
