// The home's source: puts files into the entry tasks' queues as new stream items.
// Back-pressure: before each batch it looks at the depth of every task queue of the app, sends
// no more than the room left under `queueCap` in the fullest one, and waits while there is none,
// so a slow task slows the source instead of letting Redis grow without bound.
import { readFile, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { AppSpec } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import { appKeys, SINK_QUEUE } from '../queue/keys.js';
import { jobPrefix } from '../queue/naming.js';
import { readSettings, type PipelineSettings } from '../queue/settings.js';
import { AppQueues, execOrThrow, formatBytes } from '../queue/transport.js';

export interface SubmitOptions {
  runId?: string;
  settings?: PipelineSettings;
  /** Called after each item is in the queues. */
  onProgress?: (done: number, total: number) => void;
  /** Called while the source waits for room (back-pressure), with the fullest queue. */
  onBackPressure?: (task: string, depth: number) => void;
}

export interface SubmittedItem {
  item: string;
  file: string;
  name: string;
  enteredAt: number;
}

/** Waiting jobs per task queue of the app (and the sink queue `home`). */
export async function queueDepths(queues: AppQueues, app: AppSpec): Promise<Record<string, number>> {
  const names = [...app.dagTasks, SINK_QUEUE];
  const counts = await Promise.all(names.map((n) => queues.queue(n).getJobCounts('wait', 'prioritized', 'delayed')));
  return Object.fromEntries(names.map((n, i) => [n, Object.values(counts[i]!).reduce((a, b) => a + b, 0)]));
}

/** Items sent per round trip by the source. */
const SUBMIT_BATCH = 100;

function newItemId(base: string): string {
  return `${base || 'item'}-${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/**
 * Submit files as new items. The item id is the file name's job prefix (Jupiter's rule) when
 * that is unique in the batch and unused in Redis, else a generated one; the file keeps its name.
 */
export async function submitItems(redis: Redis, prefix: string, app: AppSpec, files: string[], opts: SubmitOptions = {}): Promise<SubmittedItem[]> {
  const settings = opts.settings ?? (await readSettings(redis, prefix, app.name));
  const keys = appKeys(prefix, app.name);
  const queues = new AppQueues(redis, prefix, app.name, settings);
  try {
    for (const f of files) {
      const st = await stat(f).catch(() => undefined);
      if (!st?.isFile()) throw inputError(`input ${f} is not a readable file`);
      if (st.size > settings.maxBlobBytes) {
        throw inputError(`input ${f} is ${formatBytes(st.size)}, over the pipeline's size limit of ${formatBytes(settings.maxBlobBytes)}`, {
          file: f,
          hint: 'raise maxBlobBytes in the pipeline settings, or pass a smaller file',
        });
      }
    }
    const prefixes = files.map((f) => jobPrefix(basename(f)));
    const taken = (await execOrThrow(prefixes.reduce((p, id) => p.exists(keys.item(id)), redis.pipeline()))) as number[];
    const ids = prefixes.map((p, i) => (prefixes.indexOf(p) === prefixes.lastIndexOf(p) && !taken[i] && p ? p : newItemId(p)));

    const out: SubmittedItem[] = [];
    let sinceTrim = 0;
    for (let i = 0; i < files.length;) {
      // Room left in the fullest queue decides how many items may go in now.
      let room = 0;
      for (;;) {
        const depths = await queueDepths(queues, app);
        const [fullest, depth] = Object.entries(depths).sort((x, y) => y[1] - x[1])[0] ?? ['', 0];
        room = settings.queueCap - depth;
        if (room > 0) break;
        opts.onBackPressure?.(fullest, depth);
        await new Promise((r) => setTimeout(r, 100));
      }
      const n = Math.min(SUBMIT_BATCH, room, files.length - i);
      const chunk = files.slice(i, i + n);
      const bytes = await Promise.all(chunk.map((f) => readFile(f)));
      const enteredAt = Date.now();
      const batch = chunk.map((file, j) => ({ item: ids[i + j]!, file, name: basename(file), enteredAt }));
      await queues.sendMany(
        batch.map((b, j) => ({ item: b.item, from: SINK_QUEUE, files: [{ name: b.name, bytes: bytes[j]!, to: app.entryTasks }] })),
        (pipe) => {
          for (const b of batch) {
            pipe.hset(keys.item(b.item), 'enteredAt', enteredAt, 'file', b.name, 'runId', opts.runId ?? '');
            pipe.zadd(keys.items, enteredAt, b.item);
          }
          pipe.hincrby(keys.stats, 'items:submitted', n);
        },
      );
      out.push(...batch);
      i += n;
      opts.onProgress?.(i, files.length);
      sinceTrim += n;
      if (sinceTrim >= 256 || i === files.length) {
        await trimItems(redis, prefix, app.name, settings.keepItems);
        sinceTrim = 0;
      }
    }
    return out;
  } finally {
    await queues.close();
  }
}

/** Forget the records of the oldest items beyond `keep` (bounded memory on endless streams). */
export async function trimItems(redis: Redis, prefix: string, app: string, keep: number): Promise<number> {
  const keys = appKeys(prefix, app);
  const excess = (await redis.zcard(keys.items)) - keep;
  if (excess <= 0) return 0;
  const popped = await redis.zpopmin(keys.items, excess);
  const ids = popped.filter((_, i) => i % 2 === 0);
  const pipe = redis.pipeline();
  for (const id of ids) pipe.del(keys.item(id), keys.out(id), keys.rt(id));
  await execOrThrow(pipe);
  return ids.length;
}
