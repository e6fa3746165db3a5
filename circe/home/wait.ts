// Waiting for items to finish (`jupiter deploy --wait`). An item is finished when none of its
// jobs is in flight any more; its record then holds the makespan and whether it failed.
import type { Redis } from 'ioredis';
import { runtimeError } from '../../config/errors.js';
import { appKeys } from '../queue/keys.js';
import { execOrThrow } from '../queue/transport.js';

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

export interface WaitOptions {
  timeoutMs?: number;
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
    const pipe = redis.pipeline();
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

/** Resolve when every item is finished (delivered or failed); throws on timeout. */
export async function waitForItems(redis: Redis, prefix: string, app: string, items: string[], opts: WaitOptions = {}): Promise<ItemResult[]> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10 * 60_000);
  let open = [...items];
  const finished = new Map<string, ItemResult>();
  for (;;) {
    // Items finish roughly in order: look at a window of the oldest open ones, so a long
    // stream does not cost a full scan of every item per poll.
    const res = await itemResults(redis, prefix, app, open.slice(0, 200));
    for (const r of res) if (r.done) finished.set(r.item, r);
    open = open.filter((id) => !finished.has(id));
    opts.onProgress?.(finished.size, items.length, tally(finished.values()));
    if (open.length === 0) return items.map((id) => finished.get(id)!);
    if (Date.now() > deadline) {
      throw runtimeError(`${open.length} of ${items.length} item(s) of app ${app} did not finish in time (first: ${open.slice(0, 3).join(', ')})`, {
        hint: `look at \`jupiter status ${app}\` (queue depths, dead letters) and \`jupiter logs ${app} <task>\``,
      });
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
  }
}
