// Requests to an agent travel through Redis: a JSON message is RPUSHed to the agent's inbox
// list; the agent BLPOPs it and answers on the message's reply list. Lists (not pub/sub) so a
// message sent while the agent is busy or reconnecting is not lost.
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';

export interface AgentMessage {
  type: string;
  /** Request id; replies go to keys.reply(id). */
  id: string;
  [field: string]: unknown;
}

/** Replies expire after an hour if nobody reads them. */
export const REPLY_TTL_SEC = 3600;

export function newRequestId(): string {
  return randomUUID();
}

export async function sendToAgent(redis: Redis, keys: Keys, node: string, msg: AgentMessage): Promise<void> {
  await redis.rpush(keys.agentInbox(node), JSON.stringify(msg));
}

export async function reply(redis: Redis, keys: Keys, id: string, body: unknown): Promise<void> {
  const key = keys.reply(id);
  await redis.multi().rpush(key, JSON.stringify(body)).expire(key, REPLY_TTL_SEC).exec();
}

/**
 * Wait for `count` replies to request `id` (or until `until` returns true for the replies so far),
 * using a dedicated blocking connection; resolves with what arrived by the deadline.
 */
export async function collectReplies<T>(
  redis: Redis,
  keys: Keys,
  id: string,
  opts: { count: number; timeoutMs: number; onReply?: (r: T) => void },
): Promise<T[]> {
  const conn = redis.duplicate();
  const out: T[] = [];
  const deadline = Date.now() + opts.timeoutMs;
  try {
    while (out.length < opts.count) {
      const left = deadline - Date.now();
      if (left <= 0) break;
      const res = await conn.blpop(keys.reply(id), Math.max(0.1, Math.min(1, left / 1000)));
      if (!res) continue;
      const r = JSON.parse(res[1]) as T;
      out.push(r);
      opts.onReply?.(r);
    }
  } finally {
    conn.disconnect();
  }
  return out;
}
