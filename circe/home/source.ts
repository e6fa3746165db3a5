// The home's source: puts files into the entry tasks' queues as new stream items.
// Back-pressure: before adding, it looks at the depth of every task queue of the app and waits
// while any holds `queueCap` or more waiting jobs, so a slow task slows the source instead of
// letting Redis grow without bound.
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
    let sinceCheck = Infinity;
    let lastMax = 0;
    for (let i = 0; i < files.length; i++) {
      // Look at the queues every 64 items, or before each item once they are half full.
      if (sinceCheck >= 64 || lastMax >= settings.queueCap / 2) {
        for (;;) {
          const depths = await queueDepths(queues, app);
          const [fullest, depth] = Object.entries(depths).sort((a, b) => b[1] - a[1])[0] ?? ['', 0];
          lastMax = depth;
          if (depth < settings.queueCap) break;
          opts.onBackPressure?.(fullest, depth);
          await new Promise((r) => setTimeout(r, 100));
        }
        sinceCheck = 0;
      }
      sinceCheck++;
      const file = files[i]!;
      const name = basename(file);
      const item = ids[i]!;
      const bytes = await readFile(file);
      const enteredAt = Date.now();
      const pipe = redis.pipeline();
      pipe.hset(keys.item(item), 'enteredAt', enteredAt, 'file', name, 'runId', opts.runId ?? '');
      pipe.zadd(keys.items, enteredAt, item);
      pipe.hincrby(keys.stats, 'items:submitted', 1);
      await execOrThrow(pipe);
      await queues.send(item, SINK_QUEUE, [{ name, bytes, to: app.entryTasks }]);
      out.push({ item, file, name, enteredAt });
      opts.onProgress?.(i + 1, files.length);
      if ((i + 1) % 256 === 0 || i === files.length - 1) await trimItems(redis, prefix, app.name, settings.keepItems);
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
