// Redis connections following BullMQ's production advice: workers never give up on a command
// (maxRetriesPerRequest: null) and reconnect forever after a Redis restart.
import { Redis } from './libs.js';

/**
 * A connection that has waited this long for any byte of an answer is taken for stalled behind a
 * cut link and dropped (ioredis `socketTimeout`): it reconnects, and its unanswered commands are
 * sent again on the new one, as after a Redis restart. TCP retransmits at doubling intervals, so
 * a connection whose request went out as a link went down stays silent for up to as long again
 * after the link returns: after a 30 s cut of the testbed home's links the runners took ~20 s
 * more to move items. Above BullMQ's longest blocking wait (10 s), so a worker waiting for jobs
 * is not taken for stalled; a process starved that long (a synchronous task) only reconnects.
 */
export const STALL_MS = 20_000;

export interface ConnectOptions {
  /** Shown in CLIENT LIST. */
  name?: string;
  /**
   * Producers outside the pipeline (CLI submit/status) fail fast instead of queueing commands
   * while Redis is away; runners wait for Redis to come back.
   */
  failFast?: boolean;
  /** STALL_MS, unless a test needs it shorter. */
  stallMs?: number;
}

export function connectRedis(url: string, opts: ConnectOptions = {}): Redis {
  const redis = new Redis(url, {
    connectionName: opts.name,
    maxRetriesPerRequest: opts.failFast ? 1 : null,
    enableOfflineQueue: true,
    retryStrategy: (times) => Math.min(50 * times, 2000),
    socketTimeout: opts.stallMs ?? STALL_MS,
  });
  // ioredis logs unhandled 'error' events; reconnects are expected, the caller reports failures.
  redis.on('error', () => undefined);
  return redis;
}

/**
 * End a connection: QUIT (replies in flight still arrive) while it is connected; otherwise drop it
 * at once, since a QUIT would wait in the offline queue of a connection that keeps reconnecting.
 */
export async function endConnection(redis: Redis): Promise<void> {
  if (redis.status === 'ready') await redis.quit().catch(() => undefined);
  else redis.disconnect();
}

/** Every key matching a glob pattern, by SCAN (never KEYS, which blocks Redis). */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...keys);
  } while (cursor !== '0');
  return out;
}
