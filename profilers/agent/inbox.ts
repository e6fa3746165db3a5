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
 * Read the replies to request `id` as they come, on a dedicated blocking connection, until
 * `handle` says it has all it wants or the deadline passes (`deadline()` is asked again after
 * every wait, so a caller may move it as news arrives).
 */
export async function readReplies(redis: Redis, keys: Keys, id: string, handle: (msg: unknown) => boolean, deadline: () => number): Promise<void> {
  const conn = redis.duplicate();
  try {
    for (;;) {
      const left = deadline() - Date.now();
      if (left <= 0) return;
      const res = await conn.blpop(keys.reply(id), Math.max(0.1, Math.min(1, left / 1000)));
      if (res && handle(JSON.parse(res[1]))) return;
    }
  } finally {
    conn.disconnect();
  }
}

/** Wait for `count` replies to request `id`; resolves with what arrived by the deadline. */
export async function collectReplies<T>(
  redis: Redis,
  keys: Keys,
  id: string,
  opts: { count: number; timeoutMs: number; onReply?: (r: T) => void },
): Promise<T[]> {
  const out: T[] = [];
  if (opts.count <= 0) return out;
  const deadline = Date.now() + opts.timeoutMs;
  await readReplies(redis, keys, id, (msg) => {
    out.push(msg as T);
    opts.onReply?.(msg as T);
    return out.length >= opts.count;
  }, () => deadline);
  return out;
}
