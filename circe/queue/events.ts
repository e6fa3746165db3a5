// Appending runtime events (config/events.ts) to the app's capped stream, and finishing items.
import type { ChainableCommander, Redis } from 'ioredis';
import type { AppEvent, ItemDoneEvent } from '../../config/events.js';
import type { AppKeys } from './keys.js';
import { execOrThrow } from './transport.js';

/** Recent makespans kept for status percentiles. */
export const MAKESPAN_WINDOW = 10_000;

export function addEvent(pipe: ChainableCommander, keys: AppKeys, maxLen: number, ev: AppEvent): void {
  pipe.xadd(keys.events, 'MAXLEN', '~', maxLen, '*', 'json', JSON.stringify(ev));
}

/**
 * Called by whoever took the item's last in-flight job (the sink, or a runner whose job was the
 * last one, e.g. a dead-lettered one): publish ItemDoneEvent and the makespan.
 */
export async function emitItemDone(redis: Redis, keys: AppKeys, maxLen: number, item: string, makespanMs: number): Promise<ItemDoneEvent> {
  const [outputs] = (await execOrThrow(redis.pipeline().smembers(keys.out(item)))) as [string[]];
  const ev: ItemDoneEvent = { type: 'item-done', app: keys.app, item, makespanMs, outputs: outputs.sort(), ts: Date.now() };
  const pipe = redis.pipeline();
  addEvent(pipe, keys, maxLen, ev);
  pipe.lpush(keys.makespans, makespanMs);
  pipe.ltrim(keys.makespans, 0, MAKESPAN_WINDOW - 1);
  pipe.hincrby(keys.stats, 'items:done', 1);
  await execOrThrow(pipe);
  return ev;
}
