// Failed deliveries: a retry is announced as a `fail` event and the delivery is sent again alone
// after a backoff; the final failure becomes a dead letter (shown by status), frees what the item
// held at this task and lets the item finish as failed.
import type { Job } from 'bullmq';
import type { ChainableCommander } from 'ioredis';
import type { TaskEvent } from '../../config/events.js';
import { addEvent } from './events.js';
import type { AppKeys } from './keys.js';
import type { BundleJob, Delivery } from './naming.js';
import type { ScriptedRedis } from './scripts.js';
import type { PipelineSettings } from './settings.js';
import { execOrThrow, type AppQueues, type QueuedJob } from './transport.js';
import { pipeline } from './pipeline.js';

export interface ScriptedPipeline extends ChainableCommander {
  jRelease(blobPrefix: string, blob: string, holder: string): ScriptedPipeline;
  jFinish(pending: string, item: string, stats: string, makespans: string, queued: string, id: string, now: number, eventsMaxLen: number, app: string): ScriptedPipeline;
  /** See scripts.ts QUIET: the keys from quietKeys. */
  jQuiet(wait: string, prioritized: string, marker: string): ScriptedPipeline;
}

/** What a join stores per collected input. */
export interface StoredInput {
  id: string;
  name: string;
  blob: string;
  from: string;
  at: number;
  /** Bytes (a missing blob reads back as 0 bytes from the arrive script). */
  size?: number;
  /** Direct data path: the node holding the bytes (Delivery.src). */
  src?: string;
}

export interface DeadLetter {
  app: string;
  task: string;
  node: string;
  item: string;
  file: string;
  from: string;
  error: string;
  attempts: number;
  ts: number;
}

export interface FailureContext {
  redis: ScriptedRedis;
  keys: AppKeys;
  settings: PipelineSettings;
  /** Receiving task (its queue's name), or `home` for the sink. */
  task: string;
  node: string;
  numInputs: number;
}

/**
 * The task failed on a delivery (`at`: when it entered the task): announce it, then send it again
 * after the backoff, or bury it when the error is permanent or its attempts are used up.
 */
export async function failDelivery(ctx: FailureContext, queues: AppQueues, d: Delivery, at: number, err: Error, permanent: boolean): Promise<{ attempt: number; final: boolean }> {
  const attempt = (d.tries ?? 0) + 1;
  const final = permanent || attempt >= ctx.settings.attempts;
  await recordFailure(ctx, d, at, err, attempt, final);
  if (!final) await queues.retry(ctx.task, d, ctx.settings.backoffMs * 2 ** (attempt - 1));
  return { attempt, final };
}

export async function recordFailure(ctx: FailureContext, d: Delivery, at: number, err: Error, attempt: number, final: boolean): Promise<void> {
  const { keys: k, task: T, redis } = ctx;
  const pipe = pipeline(redis) as ScriptedPipeline;
  const ev: TaskEvent = { type: 'fail', app: k.app, task: T, node: ctx.node, item: d.item, ts: Date.now(), error: err.message, attempt, final };
  addEvent(pipe, k, ctx.settings.eventsMaxLen, ev);
  if (!final) {
    pipe.hincrby(k.stats, `retried:${T}`, 1);
    await execOrThrow(pipe);
    return;
  }
  const letter: DeadLetter = { app: k.app, task: T, node: ctx.node, item: d.item, file: d.name, from: d.from, error: err.message, attempts: attempt, ts: Date.now() };
  pipe.lpush(k.deadLetters, JSON.stringify(letter));
  pipe.ltrim(k.deadLetters, 0, ctx.settings.keepFailedJobs - 1);
  pipe.hincrby(k.stats, `failed:${T}`, 1);
  pipe.hset(k.item(d.item), 'failed', 1, 'error', `${T}: ${err.message}`);
  const joined = ctx.numInputs > 1 ? await redis.hvals(k.join(T, d.item)) : [];
  const held = new Map<string, StoredInput>([[d.id, { id: d.id, name: d.name, blob: d.blob, from: d.from, at }]]);
  for (const s of joined) {
    const inp = JSON.parse(s) as StoredInput;
    held.set(inp.id, inp);
  }
  for (const inp of held.values()) pipe.jRelease(k.blob(''), inp.blob, inp.id);
  if (joined.length) pipe.del(k.join(T, d.item));
  // The item's last delivery: the script records it done and appends its item-done event.
  pipe.jFinish(k.pending(d.item), k.item(d.item), k.stats, k.makespans, k.queued(T), d.id, Date.now(), ctx.settings.eventsMaxLen, k.app);
  await execOrThrow(pipe);
}

/**
 * A whole job failed (a Redis call, not the task): BullMQ retries it while it has attempts left;
 * on the last one, its deliveries not `handled` meanwhile become dead letters.
 */
export async function failJob(ctx: FailureContext, job: Job<BundleJob>, err: Error, handled: ReadonlySet<string>, log: (msg: string) => void): Promise<{ attempt: number; final: boolean }> {
  const attempt = job.attemptsMade + 1;
  const final = attempt >= (job.opts.attempts ?? 1);
  if (final) {
    for (const d of job.data.d.filter((x) => !handled.has(x.id))) {
      await recordFailure(ctx, d, job.timestamp, err, attempt, true).catch((re: Error) => log(`cannot record failure: ${re.message}`));
    }
  }
  return { attempt, final };
}

/**
 * A job whose runners died while holding it (BullMQ saw it stalled too often, or a starting
 * runner took it back): a bundle is split, each delivery sent again in a job of its own without
 * counting an attempt, so that one delivery that kills its runner cannot take its neighbours
 * with it; a job of one is buried. A delivery the task already committed is not run again, but
 * what it sent is sent again from its done marker: the runner may have died between the commit
 * and the adds (ids are deterministic; receivers drop what they already had). Returns the ids of
 * the jobs of one file it sent.
 */
export async function stalledOut(ctx: FailureContext, queues: AppQueues, job: Job<BundleJob>, err: Error): Promise<string[]> {
  const ds = job.data.d;
  const markers = (await execOrThrow(ds.reduce((p, d) => p.get(ctx.keys.done(ctx.task, d.item)), pipeline(ctx.redis)))) as Array<string | null>;
  const outbox: QueuedJob[] = [];
  const sent: string[] = [];
  for (const [i, d] of ds.entries()) {
    const marker = markers[i];
    if (marker !== null && marker !== undefined) {
      if (marker.startsWith('[')) outbox.push(...(JSON.parse(marker) as QueuedJob[]));
      continue;
    }
    if (ds.length > 1) {
      await queues.sendAlone(ctx.task, { ...d, resent: true }, `${d.id}s${job.id}`);
      sent.push(`${d.id}s${job.id}`);
    } else await recordFailure(ctx, d, job.timestamp, err, (d.tries ?? 0) + 1, true);
  }
  if (outbox.length > 0) await queues.resend(outbox);
  return sent;
}
