// Moving files between tasks: bytes go to a binary Redis string (the blob), a small delivery with
// a reference goes to each receiving task's BullMQ queue, bundled with the other deliveries sent
// to that task at the same time (one job each). Every id is deterministic, so a sender that is
// redelivered after a crash re-sends the same deliveries and receivers recognise them.
import { randomBytes } from 'node:crypto';
import { BULLMQ_VERSION, Job, Queue, type JobsOptions } from './libs.js';
import type { Redis, ChainableCommander } from 'ioredis';
import { withScripts } from './scripts.js';
import { runtimeError } from '../../config/errors.js';
import { appKeys, type AppKeys } from './keys.js';
import { blobIdFor, BUNDLE_MAX, bundleIdFor, deliveryIdFor, inlineBytes, LUA_BYTES_MAX, type BundleJob, type Delivery } from './naming.js';
import type { PipelineSettings } from './settings.js';
import { pipeline } from './pipeline.js';
import { uncopiedSet } from './uncopied-set.js';

export interface OutgoingFile {
  name: string;
  /** The bytes; on the direct path, the pointer to the node that keeps them (see `stored`). */
  bytes: Buffer;
  /** Direct data path: the bytes stay on this node's store (circe/dataplane); `size` is theirs. */
  stored?: { node: string; size: number };
  /** Receiving queues (task names, or `home` for the sink). */
  to: string[];
}

/** A large output's bytes under a key of their run alone, until the commit makes them the blob. */
export interface Staged {
  key: string;
  bytes: Buffer;
}

/** A delivery and the queue it goes to (task name, or `home` for the sink). */
export interface QueuedJob {
  queue: string;
  d: Delivery;
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
  private readonly queues = new Map<string, Queue<BundleJob>>();
  /** Queues whose BullMQ scripts are defined on the connection (addTo needs them). */
  private readonly readyQueues = new Set<string>();

  constructor(readonly redis: Redis, readonly prefix: string, readonly app: string, readonly settings: PipelineSettings) {
    this.keys = appKeys(prefix, app);
    withScripts(redis);
  }

  queue(name: string): Queue<BundleJob> {
    let q = this.queues.get(name);
    if (!q) {
      // No version check: it costs an INFO round trip per Queue object, ahead of its first add
      // (the source makes new ones per submit); the runners' workers check the version.
      q = new Queue<BundleJob>(name, { connection: this.redis, prefix: this.keys.queuePrefix, skipVersionCheck: true });
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
      // Attempts count whole-job failures (Redis unreachable); a delivery whose task fails is
      // retried alone (retryDelivery).
      removeOnComplete: true,
      removeOnFail: { count: this.settings.keepFailedJobs },
    };
  }

  /**
   * The deliveries that carry a task's outputs, and the blob arguments for the commit script,
   * which stores each file once and registers one delivery per receiver. The delivery ids join
   * the item's in-flight set before their jobs exist, so the item can never look finished early.
   */
  prepare(item: string, from: string, files: OutgoingFile[]): { jobs: QueuedJob[]; outputs: number; stageArgs: Array<string | Buffer | number>; staged: Staged[] } {
    const jobs: QueuedJob[] = [];
    const stageArgs: Array<string | Buffer | number> = [];
    const staged: Staged[] = [];
    let outputs = 0;
    for (const f of files) {
      const size = f.stored?.size ?? f.bytes.length;
      checkBlobSize(f.name, size, this.settings.maxBlobBytes);
      const blob = blobIdFor(item, from, f.name);
      const ids = f.to.map((to, i) => deliveryIdFor(item, from, f.name, to, i));
      if (ids.length === 0) continue;
      // A large output goes under a key of this run alone, which the commit renames to the blob.
      const stage = !f.stored && f.bytes.length > LUA_BYTES_MAX ? { key: `${this.keys.blob(blob)}:s:${randomBytes(6).toString('hex')}`, bytes: f.bytes } : undefined;
      if (stage) staged.push(stage);
      stageArgs.push(blob, stage ? '' : f.bytes, stage?.key ?? '', ids.length, ...f.to.flatMap((to, i) => [ids[i]!, to]));
      outputs++;
      const inline = f.stored ? undefined : inlineBytes(f.bytes);
      const src = f.stored?.node;
      f.to.forEach((to, i) => jobs.push({ queue: to, d: { id: ids[i]!, item, name: f.name, blob, from, size, inline, ...(src ? { src } : {}) } }));
    }
    return { jobs, outputs, stageArgs, staged };
  }

  /**
   * Send deliveries: one job per receiving queue carrying all of that queue's deliveries (split
   * at BUNDLE_MAX), every queue in the same round trip. Re-sending is harmless: a job id still
   * queued is ignored by BullMQ, and receivers recognise deliveries they already handled.
   */
  async enqueue(jobs: QueuedJob[]): Promise<void> {
    const pipe = pipeline(this.redis);
    const check = await this.addTo(pipe, jobs);
    check(await execOrThrow(pipe));
  }

  /**
   * Until the receiving queues of `jobs` can take adds in a pipeline: BullMQ defines its scripts
   * on the connection when a Queue first connects.
   */
  private ready(jobs: QueuedJob[]): Promise<unknown> | undefined {
    let waits: Array<Promise<unknown>> | undefined;
    for (const j of jobs) {
      if (this.readyQueues.has(j.queue)) continue;
      const q = this.queue(j.queue);
      (waits ??= []).push(q.waitUntilReady().then(() => this.readyQueues.add(j.queue)));
    }
    return waits && Promise.all(waits);
  }

  /**
   * Queue the jobs carrying `jobs` (one per receiving queue, split at BUNDLE_MAX) on `pipe`,
   * after what it holds, as BullMQ's own add would send them (its add script, by Job.addJob on a
   * transaction): the caller's commands and the adds leave in one write, and the receiver's
   * wake-up comes with them instead of one write later (Queue.add is a chain of promises; in a
   * runner's commit it reached Redis ~1 ms after the commit it belongs to, on the critical path
   * of every hop). Waits only while a receiving queue is new (`ready`); nothing is sent. Returns a
   * check of the pipeline's replies to the adds.
   */
  async addTo(pipe: ChainableCommander, jobs: QueuedJob[]): Promise<(replies: unknown[]) => void> {
    await this.ready(jobs);
    const byQueue = new Map<string, Delivery[]>();
    for (const j of jobs) {
      const list = byQueue.get(j.queue);
      if (list) list.push(j.d);
      else byQueue.set(j.queue, [j.d]);
    }
    // BullMQ's add script goes in by the name it was defined under on this connection; a
    // pipeline made before BullMQ defined it (its first Queue connecting) takes the connection's.
    type Commands = Record<string, ((a: unknown[]) => unknown) | undefined>;
    const tx = { runCommand: (name: string, args: unknown[]) => ((pipe as unknown as Commands)[name] ?? (this.redis as unknown as Commands)[name])!.call(pipe, args) };
    const start = pipe.length;
    for (const [q, list] of byQueue) {
      for (let i = 0; i < list.length; i += BUNDLE_MAX) {
        const b = list.slice(i, i + BUNDLE_MAX);
        const opts = this.jobOptions(bundleIdFor(b));
        const job = new Job<BundleJob>(this.queue(q), b.length === 1 ? b[0]!.name : `${b.length} files`, { d: b }, opts, opts.jobId);
        // Synchronous up to its first await: the command is in the pipeline when this returns,
        // unless BullMQ refused the job's id or options (ours are fixed), or a BullMQ other than
        // the locked one no longer queues it at once.
        const before = pipe.length;
        job.addJob(tx as never).catch(() => undefined);
        if (pipe.length !== before + 1) {
          throw runtimeError(`cannot queue job ${String(opts.jobId)} for ${q}: BullMQ ${BULLMQ_VERSION} added no command for it`, {
            hint: 'its id or options were refused, or this BullMQ no longer adds a job to a transaction at once: install the version package-lock.json names (npm ci)',
          });
        }
      }
    }
    const count = pipe.length - start;
    return (replies) => {
      for (let i = start; i < start + count; i++) {
        // The add script's negative codes (a missing parent, ...): none apply to these jobs.
        if (typeof replies[i] === 'number' && (replies[i] as number) < 0) throw runtimeError(`BullMQ did not add a job (code ${String(replies[i])})`);
      }
    };
  }

  /** Send an outbox again (its sender may have died before it went out): flagged as resent. */
  resend(jobs: QueuedJob[]): Promise<unknown> {
    return this.enqueue(jobs.map((j) => ({ queue: j.queue, d: { ...j.d, resent: true } })));
  }

  /**
   * Send one delivery again, alone and after `delayMs`, as attempt `tries + 1` (its task failed
   * on it). The job id names the attempt: the job that carried the failed try is still active.
   */
  retry(queue: string, d: Delivery, delayMs: number): Promise<unknown> {
    const tries = (d.tries ?? 0) + 1;
    return this.sendAlone(queue, { ...d, tries }, `${d.id}r${tries}`, delayMs);
  }

  /** One delivery in a job of its own, under a job id the caller makes unique. */
  sendAlone(queue: string, d: Delivery, jobId: string, delayMs = 0): Promise<unknown> {
    return this.queue(queue).add(d.name, { d: [d] }, { ...this.jobOptions(jobId), delay: delayMs });
  }

  /**
   * Several items at once (the source's batches): one script stores every blob, then one
   * bundle per receiving queue. `before` adds commands that run ahead of the blob writes;
   * returns their replies (the pipeline's, which start with them).
   */
  async sendMany(batch: Array<{ item: string; from: string; files: OutgoingFile[] }>, before?: (pipe: ChainableCommander) => void): Promise<unknown[]> {
    const pipe = pipeline(this.redis) as ChainableCommander & { jStage(...a: Array<string | number | Buffer>): unknown };
    before?.(pipe);
    const keys: string[] = [];
    const args: Array<string | number | Buffer> = [this.keys.queued('')];
    const jobs: QueuedJob[] = [];
    const apartSets: Array<{ key: string; bytes: Buffer }> = [];
    for (const { item, from, files } of batch) {
      for (const f of files) {
        checkBlobSize(f.name, f.bytes.length, this.settings.maxBlobBytes);
        const blob = blobIdFor(item, from, f.name);
        const ids = f.to.map((to, i) => deliveryIdFor(item, from, f.name, to, i));
        if (ids.length === 0) continue;
        keys.push(this.keys.blob(blob), this.keys.blobHolders(blob), this.keys.pending(item));
        // A large file is stored by a plain SET ahead of the script (a new item's blob: nobody
        // else writes it), outside the pipeline (setApart).
        const apart = f.bytes.length > LUA_BYTES_MAX;
        if (apart) apartSets.push({ key: this.keys.blob(blob), bytes: f.bytes });
        args.push(apart ? '' : f.bytes, apart ? '1' : '0', ids.length, ...f.to.flatMap((to, i) => [ids[i]!, to]));
        const inline = inlineBytes(f.bytes);
        f.to.forEach((to, i) => jobs.push({ queue: to, d: { id: ids[i]!, item, name: f.name, blob, from, size: f.bytes.length, inline } }));
      }
    }
    if (jobs.length === 0 && !before) return [];
    if (keys.length > 0) pipe.jStage(keys.length, ...keys, ...args);
    // The adds right behind the blob writes, in the same write (addTo).
    const check = await this.addTo(pipe, jobs);
    const apartDone = setApart(this.redis, apartSets);
    const [replies] = await Promise.all([execOrThrow(pipe), apartDone]);
    check(replies);
    return replies;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    this.queues.clear();
    this.readyQueues.clear();
  }
}

/**
 * SET large values by commands of their own, written to the connection ahead of the pipeline the
 * caller sends next (Redis runs them first). In a pipeline ioredis copies a command's arguments
 * into one buffer and then the whole pipeline's into another: a batch of 100 items of 1 MiB was
 * a fresh 100 MiB buffer, which the kernel maps and faults in page by page (~2.5 ms a MiB on these
 * VMs; 10 ms of the source's CPU per 1 MiB item), where a command alone is one copy of its value.
 */
export function setApart(redis: Redis, sets: Array<{ key: string; bytes: Buffer; ttlSec?: number }>): Promise<unknown> {
  return Promise.all(sets.map((s) => uncopiedSet(redis, s.key, s.bytes, s.ttlSec).catch((e: Error) => {
    throw runtimeError(`Redis command failed: ${e.message}`, {}, e);
  })));
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
