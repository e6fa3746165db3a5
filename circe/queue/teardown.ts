// Removing every key of an app: queues, blobs, joins, records, events (all under one prefix).
import type { Redis } from 'ioredis';
import { appKeys } from './keys.js';

const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** Delete every key under redisKeys(prefix).app(app); returns how many were removed. */
export async function teardownAppKeys(redis: Redis, prefix: string, app: string): Promise<number> {
  const match = `${globEscape(appKeys(prefix, app).base)}*`;
  let cursor = '0';
  let removed = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
    cursor = next;
    if (keys.length) removed += await redis.unlink(...keys);
  } while (cursor !== '0');
  return removed;
}
