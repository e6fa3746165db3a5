// Appending runtime events (config/events.ts) to the app's capped stream.
import type { ChainableCommander } from 'ioredis';
import type { AppEvent, ItemDoneEvent } from '../../config/events.js';
import type { AppKeys } from './keys.js';

/** Recent makespans kept for status percentiles (the scripts trim the list to this). */
export const MAKESPAN_WINDOW = 10_000;

export function addEvent(pipe: ChainableCommander, keys: AppKeys, maxLen: number, ev: AppEvent): void {
  pipe.xadd(keys.events, 'MAXLEN', '~', maxLen, '*', 'json', JSON.stringify(ev));
}

/**
 * The item-done event of an item (the scripts that finish an item append the same JSON to the
 * events stream themselves, in the same step: see finish_item in scripts.ts).
 */
export function itemDoneEvent(app: string, item: string, makespanMs: number, outputs: string[], ts: number): ItemDoneEvent {
  return { type: 'item-done', app, item, makespanMs, outputs: [...outputs].sort(), ts };
}
