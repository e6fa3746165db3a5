// The home's source: puts files into the entry tasks' queues as new stream items, one item per
// job (files sharing a job prefix, Jupiter's rule, enter together).
// Back-pressure: before each batch it looks at the depth of every task queue of the app (counting
// what waits upstream of it), sends no more than the room left under `queueCap` in the fullest
// one, and waits while there is none,
// so a slow task slows the source instead of letting Redis grow without bound.
import { readFileSync, statSync, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { AppSpec } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import { appKeys, SINK_QUEUE } from '../queue/keys.js';
import { BUNDLE_MAX, jobPrefix } from '../queue/naming.js';
import { parseSettings, type PipelineSettings } from '../queue/settings.js';
import { queueDepths, readDepths } from '../queue/status.js';
import { AppQueues, execOrThrow, formatBytes } from '../queue/transport.js';
import { pipeline } from '../queue/pipeline.js';

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
  /** The job's first file (its path) and name. */
  file: string;
  name: string;
  /** Every file of the job (Jupiter's rule: files sharing a job prefix are one job). */
  files: string[];
  enteredAt: number;
}

/**
 * Files grouped into jobs by Jupiter's rule (the name's prefix before the first `_`, else before
 * the first `.`), in the order each job's first file comes. The entry tasks see all files of a
 * job as one item: a task with NUM_INPUTS 2 runs once both files of the job are there.
 */
export function groupByJob(files: string[]): Array<{ job: string; files: string[] }> {
  const jobs = new Map<string, string[]>();
  for (const f of files) {
    const j = jobPrefix(basename(f));
    const list = jobs.get(j);
    if (list) {
      const same = list.find((x) => basename(x) === basename(f));
      // Two files of one name would land on one name in the task's pathin, one of them lost
      // unseen; the same file given twice is one file.
      if (same !== undefined && resolve(same) !== resolve(f)) throw inputError(`${same} and ${f} have the same name ${basename(f)}: a job's files need distinct names`, { hint: 'rename one of them, or submit them as separate calls' });
      if (same === undefined) list.push(f);
    } else {
      jobs.set(j, [f]);
    }
  }
  return [...jobs].map(([job, fs]) => ({ job, files: fs }));
}

/** Every queue of the app (task queues and the sink's) with the DAG tasks upstream of it. */
export function upstreamTasks(app: AppSpec): Map<string, string[]> {
  const parents = new Map<string, string[]>();
  for (const t of app.tasks.filter((x) => x.isDag)) {
    for (const c of t.children) parents.set(c, [...(parents.get(c) ?? []), t.name]);
  }
  const memo = new Map<string, Set<string>>();
  const up = (q: string): Set<string> => {
    let s = memo.get(q);
    if (!s) {
      s = new Set<string>();
      memo.set(q, s);
      for (const p of parents.get(q) ?? []) {
        s.add(p);
        for (const a of up(p)) s.add(a);
      }
    }
    return s;
  };
  return new Map([...app.dagTasks, SINK_QUEUE].map((q) => [q, [...up(q)]]));
}

/** Items sent per round trip by the source (two full jobs per entry task). */
const SUBMIT_BATCH = 2 * BUNDLE_MAX;
/**
 * Bytes read and sent per round trip (at least one item). A batch of 128 items of 1 MiB was 128
 * MiB of fresh buffers (read, then copied into their commands): memory the kernel maps and
 * faults in page by page, ~2.5 ms a MiB on these VMs, where a few MiB at a time reuse the heap.
 */
const SUBMIT_BATCH_BYTES = 4 * 1024 * 1024;
/** Files up to this size are read synchronously. */
const SYNC_READ_BYTES = 1024 * 1024;

function newItemId(base: string): string {
  return `${base || 'item'}-${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/**
 * Submit files as new items, one per job (groupByJob). The item id is the job prefix when it is
 * unused in Redis, else a generated one; the files keep their names.
 */
export async function submitItems(redis: Redis, prefix: string, app: AppSpec, files: string[], opts: SubmitOptions = {}): Promise<SubmittedItem[]> {
  // Synchronous stat and reads of small files: an async call costs a thread-pool hop per file,
  // many times the read itself (the source runs in the CLI, nothing else waits on it).
  const sizes = new Map<string, number>();
  for (const f of files) {
    let st: Stats | undefined;
    try {
      st = statSync(f);
    } catch {
      st = undefined;
    }
    if (!st?.isFile()) throw inputError(`input ${f} is not a readable file`);
    sizes.set(f, st.size);
  }
  const keys = appKeys(prefix, app.name);
  const jobs = groupByJob(files);
  // Settings, taken ids and the first look at the queues' depths: one pipeline (one write, one
  // reply to wake up for: on these VMs each costs more CPU than the reads themselves).
  const look = pipeline(redis);
  if (!opts.settings) look.hget(keys.settings, 'json');
  for (const j of jobs) look.exists(keys.item(j.job));
  const depthsOf = readDepths(look, prefix, app);
  const replies = await execOrThrow(look);
  const s0 = opts.settings ? 0 : 1;
  const settings = opts.settings ?? parseSettings(replies[0] as string | null);
  const taken = replies.slice(s0, s0 + jobs.length) as number[];
  let depthsAhead: Record<string, number> | undefined = depthsOf(replies, s0 + jobs.length);
  const queues = queuesFor(redis, prefix, app.name, settings);
  try {
    for (const [f, size] of sizes) {
      if (size > settings.maxBlobBytes) {
        throw inputError(`input ${f} is ${formatBytes(size)}, over the pipeline's size limit of ${formatBytes(settings.maxBlobBytes)}`, {
          file: f,
          hint: 'raise maxBlobBytes in the pipeline settings, or pass a smaller file',
        });
      }
    }
    const ids = jobs.map((j, i) => (!taken[i] && j.job ? j.job : newItemId(j.job)));

    const jobBytes = (j: { files: string[] }): number => j.files.reduce((a, f) => a + sizes.get(f)!, 0);
    const upstream = upstreamTasks(app);
    const out: SubmittedItem[] = [];
    let sinceTrim = 0;
    for (let i = 0; i < jobs.length;) {
      // Room left in the fullest queue decides how many items may go in now.
      let room = 0;
      for (;;) {
        const depths = depthsAhead ?? (await queueDepths(redis, prefix, app));
        depthsAhead = undefined;
        // What waits upstream of a queue will reach it too: counting it keeps a slow task's
        // queue within the cap (else it could fill up to twice the cap from its upstream).
        const projected = Object.entries(depths).map(([q, d]) => [q, d + (upstream.get(q) ?? []).reduce((a, u) => a + (depths[u] ?? 0), 0)] as const);
        const [fullest, depth] = [...projected].sort((x, y) => y[1] - x[1])[0] ?? ['', 0];
        room = settings.queueCap - depth;
        if (room > 0) break;
        opts.onBackPressure?.(fullest, depths[fullest] ?? depth);
        await new Promise((r) => setTimeout(r, 100));
      }
      let n = 1;
      for (let bytes = jobBytes(jobs[i]!); n < Math.min(SUBMIT_BATCH, room, jobs.length - i); n++) {
        bytes += jobBytes(jobs[i + n]!);
        if (bytes > SUBMIT_BATCH_BYTES) break;
      }
      const chunk = jobs.slice(i, i + n);
      const bytes = await Promise.all(chunk.map((j) => Promise.all(j.files.map((f) => (sizes.get(f)! <= SYNC_READ_BYTES ? readFileSync(f) : readFile(f))))));
      const enteredAt = Date.now();
      const batch = chunk.map((j, k) => ({ item: ids[i + k]!, file: j.files[0]!, name: basename(j.files[0]!), files: j.files, enteredAt }));
      let countAt = 0;
      const replies = await queues.sendMany(
        batch.map((b, k) => ({ item: b.item, from: SINK_QUEUE, files: b.files.map((f, m) => ({ name: basename(f), bytes: bytes[k]![m]!, to: app.entryTasks })) })),
        (pipe) => {
          for (const b of batch) {
            pipe.hset(keys.item(b.item), 'enteredAt', enteredAt, 'file', b.files.map((f) => basename(f)).join(';'), 'runId', opts.runId ?? '');
            pipe.zadd(keys.items, enteredAt, b.item);
          }
          pipe.hincrby(keys.stats, 'items:submitted', n);
          // The item count for the trim below, in this round trip rather than one of its own.
          countAt = pipe.length;
          pipe.zcard(keys.items);
        },
      );
      out.push(...batch);
      i += n;
      opts.onProgress?.(i, jobs.length);
      sinceTrim += n;
      if (sinceTrim >= 256 || i === jobs.length) {
        await trimItems(redis, prefix, app, settings.keepItems, Number(replies[countAt]));
        sinceTrim = 0;
      }
    }
    return out;
  } catch (e) {
    dropQueues(redis, prefix, app.name);
    throw e;
  }
}

/**
 * The source's queues, kept per connection and app across submits while the settings stay the
 * same: a new BullMQ Queue object writes its queue's meta on its first add, one more write and
 * reply per submit (each submit of a closed-loop client otherwise made them anew).
 */
const sourceQueues = new WeakMap<Redis, Map<string, { settings: string; queues: AppQueues }>>();

function queuesFor(redis: Redis, prefix: string, app: string, settings: PipelineSettings): AppQueues {
  let byApp = sourceQueues.get(redis);
  if (!byApp) sourceQueues.set(redis, (byApp = new Map()));
  const key = `${prefix}\n${app}`;
  const json = JSON.stringify(settings);
  const kept = byApp.get(key);
  if (kept?.settings === json) return kept.queues;
  void kept?.queues.close().catch(() => undefined);
  const queues = new AppQueues(redis, prefix, app, settings);
  byApp.set(key, { settings: json, queues });
  return queues;
}

/** Forget an app's kept queues (after a failed submit: the next one starts afresh). */
function dropQueues(redis: Redis, prefix: string, app: string): void {
  const byApp = sourceQueues.get(redis);
  const kept = byApp?.get(`${prefix}\n${app}`);
  byApp?.delete(`${prefix}\n${app}`);
  void kept?.queues.close().catch(() => undefined);
}

/**
 * Forget the records of the oldest finished items beyond `keep` (bounded memory on endless
 * streams), with the tasks' done markers for them: those would otherwise live their whole TTL,
 * which on a fast stream is millions of keys (3,000 items/s x 3 tasks x 1 h). An item still in
 * flight keeps its records (its makespan and delivered set are still to be written).
 */
export async function trimItems(redis: Redis, prefix: string, app: AppSpec, keep: number, count?: number): Promise<number> {
  const keys = appKeys(prefix, app.name);
  // `count`: the app's item count, when the caller read it already.
  const excess = (count ?? (await redis.zcard(keys.items))) - keep;
  if (excess <= 0) return 0;
  const oldest = await redis.zrange(keys.items, 0, String(excess - 1));
  const done = (await execOrThrow(oldest.reduce((p, id) => p.hexists(keys.item(id), 'doneAt'), pipeline(redis)))) as number[];
  const ids = oldest.filter((_, i) => done[i]);
  if (ids.length === 0) return 0;
  // The output paths these items own at the sink (scripts.ts LOOK) go with their records.
  const ownedFields = ids.map((id) => `item:${id}`);
  const owned = (await redis.hmget(keys.owners, ...ownedFields)).flatMap((list) => (list ? list.split('\n') : []));
  const pipe = pipeline(redis).zrem(keys.items, ...ids).hdel(keys.owners, ...ownedFields, ...owned);
  for (const id of ids) pipe.del(keys.item(id), keys.out(id), keys.rt(id), keys.joins(id), ...app.dagTasks.map((t) => keys.done(t, id)));
  await execOrThrow(pipe);
  return ids.length;
}
