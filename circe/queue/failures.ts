// Failed jobs: a retry is announced as a `fail` event; the final failure becomes a dead letter
// (shown by status), frees what the item held at this task and lets the item finish as failed.
import type { Job } from 'bullmq';
import type { ChainableCommander } from 'ioredis';
import type { TaskEvent } from '../../config/events.js';
import { addEvent, emitItemDone } from './events.js';
import type { AppKeys } from './keys.js';
import type { ItemJob } from './naming.js';
import type { ScriptedRedis } from './scripts.js';
import type { PipelineSettings } from './settings.js';
import { execOrThrow } from './transport.js';

export interface ScriptedPipeline extends ChainableCommander {
  jRelease(blobPrefix: string, blob: string, holder: string): ScriptedPipeline;
  jFinish(pending: string, item: string, stats: string, makespans: string, jobId: string, now: number): ScriptedPipeline;
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
  task: string;
  node: string;
  numInputs: number;
}

export async function recordFailure(ctx: FailureContext, job: Job<ItemJob>, err: Error, attempt: number, final: boolean): Promise<void> {
  const { keys: k, task: T, redis } = ctx;
  const d = job.data;
  const pipe = redis.pipeline() as ScriptedPipeline;
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
  const held = new Map<string, StoredInput>([[job.id!, { id: job.id!, name: d.name, blob: d.blob, from: d.from, at: job.timestamp }]]);
  for (const s of joined) {
    const inp = JSON.parse(s) as StoredInput;
    held.set(inp.id, inp);
  }
  for (const inp of held.values()) pipe.jRelease(k.blob(''), inp.blob, inp.id);
  if (joined.length) pipe.del(k.join(T, d.item));
  pipe.jFinish(k.pending(d.item), k.item(d.item), k.stats, k.makespans, job.id!, Date.now());
  const out = await execOrThrow(pipe);
  const makespan = out[out.length - 1] as number;
  if (makespan >= 0) await emitItemDone(redis, k, ctx.settings.eventsMaxLen, d.item, makespan);
}
