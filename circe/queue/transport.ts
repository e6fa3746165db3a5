// Moving files between tasks: bytes go to a binary Redis string (the blob), a small job with a
// reference goes to each receiving task's BullMQ queue. Every id is deterministic, so a sender
// that is redelivered after a crash re-sends the same jobs and receivers recognise them.
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis, ChainableCommander } from 'ioredis';
import { withScripts } from './scripts.js';
import { runtimeError } from '../../config/errors.js';
import { appKeys, type AppKeys } from './keys.js';
import { blobIdFor, jobIdFor, type ItemJob } from './naming.js';
import type { PipelineSettings } from './settings.js';

export interface OutgoingFile {
  name: string;
  bytes: Buffer;
  /** Receiving queues (task names, or `home` for the sink). */
  to: string[];
}

export interface QueuedJob {
  queue: string;
  id: string;
  data: ItemJob;
}

export function formatBytes(n: number): string {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${n} B`;
}

export class BlobTooLargeError extends Error {
  constructor(name: string, size: number, limit: number) {
    super(`file ${name} is ${formatBytes(size)}, over the pipeline's size limit of ${formatBytes(limit)}`);
    this.name = 'BlobTooLargeError';
  }
}

export function checkBlobSize(name: string, size: number, limit: number): void {
  if (size > limit) throw new BlobTooLargeError(name, size, limit);
}

/** The queues of one app, opened once and reused (a Queue object per receiving task). */
export class AppQueues {
  readonly keys: AppKeys;
  private readonly queues = new Map<string, Queue>();

  constructor(readonly redis: Redis, readonly prefix: string, readonly app: string, readonly settings: PipelineSettings) {
    this.keys = appKeys(prefix, app);
    withScripts(redis);
  }

  queue(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.redis, prefix: this.keys.queuePrefix });
      q.on('error', () => undefined);
      this.queues.set(name, q);
    }
    return q;
  }

  jobOptions(jobId: string): JobsOptions {
    return {
      jobId,
      attempts: this.settings.attempts,
      backoff: { type: 'exponential', delay: this.settings.backoffMs },
      // Completed jobs are removed at once: counts and records live in our own bounded keys,
      // and a redelivered sender's copy must become a new job that the receiver can suppress.
      removeOnComplete: true,
      removeOnFail: { count: this.settings.keepFailedJobs },
    };
  }

  /**
   * The jobs that carry a task's outputs, and the blob arguments for the commit script, which
   * stores each file once and registers one job per receiver. The job ids join the item's
   * in-flight set before the jobs exist, so the item can never look finished too early.
   */
  prepare(item: string, from: string, files: OutgoingFile[]): { jobs: QueuedJob[]; outputs: number; stageArgs: Array<string | Buffer | number> } {
    const jobs: QueuedJob[] = [];
    const stageArgs: Array<string | Buffer | number> = [];
    let outputs = 0;
    for (const f of files) {
      checkBlobSize(f.name, f.bytes.length, this.settings.maxBlobBytes);
      const blob = blobIdFor(item, from, f.name);
      const ids = f.to.map((to, i) => jobIdFor(item, from, f.name, to, i));
      if (ids.length === 0) continue;
      stageArgs.push(blob, f.bytes, ids.length, ...ids);
      outputs++;
      f.to.forEach((to, i) => jobs.push({ queue: to, id: ids[i]!, data: { item, name: f.name, blob, from, size: f.bytes.length } }));
    }
    return { jobs, outputs, stageArgs };
  }

  /**
   * Add jobs (idempotent: BullMQ ignores an id that is still queued): one add, or one addBulk
   * (a single MULTI) per receiving queue, all in the same round trip.
   */
  enqueue(jobs: QueuedJob[]): Promise<unknown> {
    const byQueue = new Map<string, QueuedJob[]>();
    for (const j of jobs) {
      const list = byQueue.get(j.queue);
      if (list) list.push(j);
      else byQueue.set(j.queue, [j]);
    }
    return Promise.all([...byQueue].map(([q, list]) => (list.length === 1
      ? this.queue(q).add(list[0]!.data.name, list[0]!.data, this.jobOptions(list[0]!.id))
      : this.queue(q).addBulk(list.map((j) => ({ name: j.data.name, data: j.data, opts: this.jobOptions(j.id) }))))));
  }

  /**
   * Several items at once (the source's batches): one script stores every blob, then one
   * addBulk per receiving queue. `before` adds commands that run ahead of the blob writes.
   */
  async sendMany(batch: Array<{ item: string; from: string; files: OutgoingFile[] }>, before?: (pipe: ChainableCommander) => void): Promise<string[]> {
    const pipe = this.redis.pipeline() as ChainableCommander & { jStage(...a: Array<string | number | Buffer>): unknown };
    before?.(pipe);
    const keys: string[] = [];
    const args: Array<string | number | Buffer> = [];
    const jobs: QueuedJob[] = [];
    for (const { item, from, files } of batch) {
      for (const f of files) {
        checkBlobSize(f.name, f.bytes.length, this.settings.maxBlobBytes);
        const blob = blobIdFor(item, from, f.name);
        const fileIds = f.to.map((to, i) => jobIdFor(item, from, f.name, to, i));
        if (fileIds.length === 0) continue;
        keys.push(this.keys.blob(blob), this.keys.blobHolders(blob), this.keys.pending(item));
        args.push(f.bytes, fileIds.length, ...fileIds);
        f.to.forEach((to, i) => jobs.push({ queue: to, id: fileIds[i]!, data: { item, name: f.name, blob, from, size: f.bytes.length } }));
      }
    }
    if (jobs.length === 0 && !before) return [];
    if (keys.length > 0) pipe.jStage(keys.length, ...keys, ...args);
    // Sent together: the queues share this connection, so Redis runs the blob writes before
    // the adds; the caller still waits for all of them before it marks its own job done.
    await Promise.all([execOrThrow(pipe), this.enqueue(jobs)]);
    return jobs.map((j) => j.id);
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
  }
}

/** Run a pipeline and throw the first command error (ioredis reports them per command). */
export async function execOrThrow(pipe: ChainableCommander): Promise<unknown[]> {
  const res = await pipe.exec();
  if (!res) throw runtimeError('Redis transaction was discarded');
  const out: unknown[] = [];
  for (const [err, val] of res) {
    if (err) throw runtimeError(`Redis command failed: ${err.message}`, {}, err);
    out.push(val);
  }
  return out;
}
