// Appending runtime events (config/events.ts) to the app's capped stream, and finishing items.
import type { ChainableCommander, Redis } from 'ioredis';
import type { AppEvent, ItemDoneEvent } from '../../config/events.js';
import type { AppKeys } from './keys.js';

/** Recent makespans kept for status percentiles (the scripts trim the list to this). */
export const MAKESPAN_WINDOW = 10_000;

export function addEvent(pipe: ChainableCommander, keys: AppKeys, maxLen: number, ev: AppEvent): void {
  pipe.xadd(keys.events, 'MAXLEN', '~', maxLen, '*', 'json', JSON.stringify(ev));
}

/**
 * Called by whoever took the item's last in-flight job (the sink, or a runner whose job was the
 * last one, e.g. a dead-lettered one): publish ItemDoneEvent (the script already recorded the
 * makespan).
 */
export async function emitItemDone(redis: Redis, keys: AppKeys, maxLen: number, item: string, makespanMs: number, outputs?: string[]): Promise<ItemDoneEvent> {
  const names = outputs ?? (await redis.smembers(keys.out(item)));
  const ev: ItemDoneEvent = { type: 'item-done', app: keys.app, item, makespanMs, outputs: [...names].sort(), ts: Date.now() };
  // A plain command, not a pipeline: a pipeline copies every script defined on the connection
  // (BullMQ's too), which costs more than the append itself.
  await redis.xadd(keys.events, 'MAXLEN', '~', maxLen, '*', 'json', JSON.stringify(ev));
  return ev;
}
