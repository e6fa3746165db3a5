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
   * Store each file once and enqueue one job per receiver. The job ids join the item's
   * in-flight set before the jobs exist, so the item can never look finished too early.
   */
  /** The jobs that carry a task's outputs, and the blob arguments for the commit script. */
  prepare(item: string, from: string, files: OutgoingFile[]): { jobs: QueuedJob[]; stageArgs: Array<string | Buffer | number> } {
    const jobs: QueuedJob[] = [];
    const stageArgs: Array<string | Buffer | number> = [];
    for (const f of files) {
      checkBlobSize(f.name, f.bytes.length, this.settings.maxBlobBytes);
      const blob = blobIdFor(item, from, f.name);
      const ids = f.to.map((to, i) => jobIdFor(item, from, f.name, to, i));
      if (ids.length === 0) continue;
      stageArgs.push(blob, f.bytes, ids.length, ...ids);
      f.to.forEach((to, i) => jobs.push({ queue: to, id: ids[i]!, data: { item, name: f.name, blob, from, size: f.bytes.length } }));
    }
    return { jobs, stageArgs };
  }

  /** Add jobs (idempotent: BullMQ ignores an id that is still queued). */
  enqueue(jobs: QueuedJob[]): Promise<unknown> {
    return Promise.all(jobs.map((j) => this.queue(j.queue).add(j.data.name, j.data, this.jobOptions(j.id))));
  }

  send(item: string, from: string, files: OutgoingFile[], before?: (pipe: ChainableCommander) => void): Promise<string[]> {
    return this.sendMany([{ item, from, files }], before);
  }

  /**
   * Several items at once (the source's batches): one pipeline for every blob, then one
   * addBulk per receiving queue. `before` adds commands that run ahead of the blob writes.
   */
  async sendMany(batch: Array<{ item: string; from: string; files: OutgoingFile[] }>, before?: (pipe: ChainableCommander) => void): Promise<string[]> {
    const pipe = this.redis.pipeline() as ChainableCommander & { jStage(...a: Array<string | Buffer>): unknown };
    before?.(pipe);
    const byQueue = new Map<string, Array<{ name: string; data: ItemJob; opts: JobsOptions }>>();
    const ids: string[] = [];
    for (const { item, from, files } of batch) {
      for (const f of files) {
        checkBlobSize(f.name, f.bytes.length, this.settings.maxBlobBytes);
        const blob = blobIdFor(item, from, f.name);
        const fileIds = f.to.map((to, i) => jobIdFor(item, from, f.name, to, i));
        if (fileIds.length === 0) continue;
        pipe.jStage(this.keys.blob(blob), this.keys.blobHolders(blob), this.keys.pending(item), f.bytes, ...fileIds);
        f.to.forEach((to, i) => {
          const list = byQueue.get(to) ?? [];
          byQueue.set(to, list);
          list.push({ name: f.name, data: { item, name: f.name, blob, from, size: f.bytes.length }, opts: this.jobOptions(fileIds[i]!) });
        });
        ids.push(...fileIds);
      }
    }
    if (ids.length === 0 && !before) return [];
    // Sent together: the queues share this connection, so Redis runs the blob writes before
    // the adds; the caller still waits for all of them before it marks its own job done.
    const stored = execOrThrow(pipe);
    const added = [...byQueue].map(([q, jobs]) => (jobs.length === 1 ? this.queue(q).add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts) : this.queue(q).addBulk(jobs)));
    await Promise.all([stored, ...added]);
    return ids;
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
