// Waiting for items to finish (`jupiter deploy --wait`). An item is finished when none of its
// jobs is in flight any more; its record then holds the makespan and whether it failed.
import type { Redis } from 'ioredis';
import type { ItemDoneEvent } from '../../config/events.js';
import { runtimeError } from '../../config/errors.js';
import { appKeys } from '../queue/keys.js';
import { execOrThrow } from '../queue/transport.js';
import { pipeline } from '../queue/pipeline.js';

export interface ItemResult {
  item: string;
  done: boolean;
  failed: boolean;
  /** Failed because a join of it could never reach NUM_INPUTS (a dead letter, not a task error). */
  stuck?: boolean;
  error?: string;
  makespanMs?: number;
  /** Output names delivered at the sink. */
  outputs: string[];
  /**
   * Its records were already trimmed (only finished items are: see trimItems), so it is done
   * but its makespan, failure and outputs are no longer known.
   */
  trimmed?: boolean;
}

/** An item as submitted: its id and when it entered (submitItems' `enteredAt`, this machine's clock). */
export interface WaitItem {
  item: string;
  enteredAt?: number;
}

/** Items a waiter keeps from events read while nobody waited for them. */
const SEEN_MAX = 10_000;

export interface WaitOptions {
  timeoutMs?: number;
  /** Longest time between looks at the records of items not yet reported done (ms). */
  pollMs?: number;
  /** finished = done + failed + deadLettered, of total. */
  onProgress?: (finished: number, total: number, tally: Tally) => void;
}

/** How the finished items ended: delivered, failed at a task, or dead-lettered at a join. */
export interface Tally {
  done: number;
  failed: number;
  deadLettered: number;
}

export function tally(results: Iterable<ItemResult>): Tally {
  const t: Tally = { done: 0, failed: 0, deadLettered: 0 };
  for (const r of results) {
    if (!r.done) continue;
    if (r.stuck) t.deadLettered++;
    else if (r.failed) t.failed++;
    else t.done++;
  }
  return t;
}

/** "8 done, 1 failed, 1 dead-lettered of 10" (zero counts left out, except done). */
export function tallyText(t: Tally, total: number): string {
  const parts = [`${t.done} done`];
  if (t.failed) parts.push(`${t.failed} failed`);
  if (t.deadLettered) parts.push(`${t.deadLettered} dead-lettered (join short of NUM_INPUTS)`);
  const finished = t.done + t.failed + t.deadLettered;
  return `${parts.join(', ')} of ${total}${finished < total ? ` (${total - finished} still running)` : ''}`;
}

export async function itemResults(redis: Redis, prefix: string, app: string, items: string[]): Promise<ItemResult[]> {
  const k = appKeys(prefix, app);
  const out: ItemResult[] = [];
  for (let i = 0; i < items.length; i += 500) {
    const batch = items.slice(i, i + 500);
    const pipe = pipeline(redis);
    for (const id of batch) {
      pipe.hmget(k.item(id), 'doneAt', 'makespanMs', 'failed', 'error', 'enteredAt', 'stuck');
      pipe.smembers(k.out(id));
    }
    const res = await execOrThrow(pipe);
    batch.forEach((id, j) => {
      const [doneAt, ms, failed, error, enteredAt, stuck] = res[2 * j] as Array<string | null>;
      // The source writes an item's record before any of its jobs exists: a submitted item
      // without one was trimmed after it finished (a stream longer than keepItems).
      const trimmed = doneAt === null && enteredAt === null;
      out.push({
        item: id,
        done: doneAt !== null || trimmed,
        ...(trimmed ? { trimmed } : {}),
        failed: failed === '1',
        ...(stuck === '1' ? { stuck: true } : {}),
        error: error ?? undefined,
        makespanMs: ms === null ? undefined : Number(ms),
        outputs: (res[2 * j + 1] as string[]).sort(),
      });
    });
  }
  return out;
}

/**
 * Waits for items to finish by a blocking read of the app's finished stream (every finished item,
 * delivered or failed, gets an item-done event there), so a finished item is seen at once instead
 * of at the next poll. Not the events stream, which carries every task's enter, start and finish
 * too: reading that, the waiter woke ~10 times per item of a 3-task app and a fast stream's waiter
 * read thousands of events a second. It holds a connection of its own for the blocking reads;
 * keep one across waits (its cursor only moves forward, so an item that finishes between two
 * waits is not missed).
 * An item whose event is missing (trimmed away from a capped stream, or its emitter died between
 * finishing it and appending) is found by a look at its record at least every `pollMs`.
 * A wait starts with a look at the records of its items (they may have finished before the
 * cursor was set, or in events read during an earlier wait); a client that gives the items as
 * submitted (with `enteredAt`) after `ready()` skips it: their events cannot be behind the cursor,
 * and events read for items nobody waited for yet are kept (`seen`). That look was one round
 * trip of every isolated item a closed-loop client waits for.
 */
export class DoneWaiter {
  private readonly blocking: Redis;
  private cursor?: string;
  /** This process's clock when the cursor was set: items entered since finish after it. */
  private readyAt?: number;
  /** Items finished in events read while waiting for others, oldest first (bounded). */
  private readonly seen = new Map<string, ItemResult | 'failed'>();

  constructor(private readonly redis: Redis, private readonly prefixKey: string, private readonly app: string) {
    this.blocking = redis.duplicate();
    this.blocking.on('error', () => undefined);
  }

  /** Start the cursor at the stream's end now (items submitted after this are never missed). */
  async ready(): Promise<void> {
    if (this.cursor !== undefined) return;
    const last = await this.redis.xrevrange(appKeys(this.prefixKey, this.app).finished, '+', '-', 'COUNT', 1);
    this.cursor = last[0]?.[0] ?? '0-0';
    this.readyAt = Date.now();
  }

  /** An item done in an event read while nobody waited for it, kept for a later wait. */
  private remember(item: string, r: ItemResult | 'failed'): void {
    this.seen.delete(item);
    this.seen.set(item, r);
    if (this.seen.size > SEEN_MAX) this.seen.delete(this.seen.keys().next().value!);
  }

  /**
   * Resolve when every item is finished (delivered or failed); throws on timeout. Items are ids,
   * or as submitItems returned them (their `enteredAt` can spare the first look: see the class).
   */
  async wait(waitFor: Array<string | WaitItem>, opts: WaitOptions = {}): Promise<ItemResult[]> {
    const deadline = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
    const pollMs = opts.pollMs ?? 1000;
    const finishedStream = appKeys(this.prefixKey, this.app).finished;
    await this.ready();
    const items = waitFor.map((w) => (typeof w === 'string' ? w : w.item));
    const enteredSince = waitFor.every((w) => typeof w !== 'string' && w.enteredAt !== undefined && w.enteredAt >= this.readyAt!);
    const finished = new Map<string, ItemResult>();
    const failedSeen: string[] = [];
    for (const id of items) {
      const r = this.seen.get(id);
      if (r === undefined) continue;
      this.seen.delete(id);
      if (r === 'failed') failedSeen.push(id);
      else finished.set(id, r);
    }
    let open = items.filter((id) => !finished.has(id));
    const look = async (ids: string[]): Promise<void> => {
      for (const r of await itemResults(this.redis, this.prefixKey, this.app, ids)) if (r.done) finished.set(r.item, r);
      open = open.filter((id) => !finished.has(id));
    };
    // After the cursor is set: an item that finishes later has its event past the cursor.
    // Items finish roughly in order: a window of the oldest open ones is enough per look.
    if (!enteredSince) await look(open.slice(0, 200));
    else if (failedSeen.length > 0) await look(failedSeen);
    let lookedAt = Date.now();
    for (;;) {
      opts.onProgress?.(finished.size, items.length, tally(finished.values()));
      if (open.length === 0) return items.map((id) => finished.get(id)!);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw runtimeError(`${open.length} of ${items.length} item(s) of app ${this.app} did not finish in time (first: ${open.slice(0, 3).join(', ')})`, {
          hint: `look at \`jupiter status ${this.app}\` (queue depths, dead letters) and \`jupiter logs ${this.app} <task>\``,
        });
      }
      const res = await this.blocking.xread('COUNT', 1000, 'BLOCK', Math.max(1, Math.min(pollMs, left)), 'STREAMS', finishedStream, this.cursor!);
      const openSet = new Set(open);
      const done: string[] = [];
      for (const [, entries] of res ?? []) {
        for (const [id, fields] of entries) {
          this.cursor = id;
          const json = fields[1];
          if (!json) continue;
          const ev = JSON.parse(json) as Partial<ItemDoneEvent>;
          if (ev.type !== 'item-done' || !ev.item) continue;
          // The event carries what a delivered item's result holds; a failed one's error is in
          // its record.
          const r: ItemResult | 'failed' = ev.failed ? 'failed' : { item: ev.item, done: true, failed: false, makespanMs: ev.makespanMs, outputs: [...(ev.outputs ?? [])].sort() };
          if (!openSet.has(ev.item)) this.remember(ev.item, r);
          else if (r === 'failed') done.push(ev.item);
          else finished.set(ev.item, r);
        }
      }
      open = open.filter((id) => !finished.has(id));
      if (done.length > 0) await look(done);
      if (Date.now() - lookedAt >= pollMs) {
        await look(open.slice(0, 200));
        lookedAt = Date.now();
      }
    }
  }

  close(): void {
    this.blocking.disconnect();
  }
}

/** Resolve when every item is finished (delivered or failed); throws on timeout. */
export async function waitForItems(redis: Redis, prefix: string, app: string, items: string[], opts: WaitOptions = {}): Promise<ItemResult[]> {
  const waiter = new DoneWaiter(redis, prefix, app);
  try {
    return await waiter.wait(items, opts);
  } finally {
    waiter.close();
  }
}
