// The home's sink: consumes the `home` queue, writes each output once into the run's output
// folder and finishes items. Delivery is exactly-once per (item id, output name): the file is
// written first (an idempotent overwrite), then the name is added to the item's delivered set;
// a redelivered or duplicated job finds its name there and is only counted as suppressed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UnrecoverableError, Worker, type Job } from '../queue/libs.js';
import type { Redis } from 'ioredis';
import type { ItemDoneEvent } from '../../config/events.js';
import { connectRedis } from '../queue/connection.js';
import { emitItemDone } from '../queue/events.js';
import { failDelivery, failJob, stalledOut, type FailureContext } from '../queue/failures.js';
import { appKeys, SINK_QUEUE, type AppKeys } from '../queue/keys.js';
import { BUNDLE_MAX, type BundleJob, type Delivery } from '../queue/naming.js';
import { requeueHeldJobs } from '../queue/requeue.js';
import { withScripts, type ScriptedRedis } from '../queue/scripts.js';
import { readSettings, type PipelineSettings } from '../queue/settings.js';
import { AppQueues, execOrThrow } from '../queue/transport.js';
import { Grouper } from '../runner/group.js';
import { HELD_BYTES, PREFETCH } from '../runner/limits.js';

export interface SinkOptions {
  app: string;
  redisUrl: string;
  prefix: string;
  /** Folder the outputs are written to (runs/<app>/<runId>/output/). */
  outputDir: string;
  node?: string;
  settings?: PipelineSettings;
  onItemDone?: (ev: ItemDoneEvent) => void;
  log?: (msg: string) => void;
}

/**
 * Where an output lands: flat, `<outputDir>/<name>`, as in the original's home `/output` folder
 * (Jupiter's naming keeps names unique per job). `owner` is the item that wrote that name first
 * in this run: when another item delivers the same name (possible only when one job id was
 * submitted twice), its file becomes `<name>.<item>`, so nothing is overwritten.
 */
export function outputPath(outputDir: string, item: string, name: string, owner: string | undefined = item): string {
  return owner === item ? join(outputDir, name) : join(outputDir, `${name}.${item}`);
}

/** What delivering one file came to: the item's makespan when it finished it, or the error. */
type Outcome = { makespan: number; outputs: string[] } | { error: Error; permanent: boolean };

/** Files up to this size are written synchronously. */
const SYNC_WRITE_BYTES = 1024 * 1024;

export class Sink {
  private worker?: Worker<BundleJob>;
  private readonly redis: ScriptedRedis;
  private readonly workerRedis: Redis;
  private settings!: PipelineSettings;
  private queues!: AppQueues;
  private readonly keys: AppKeys;
  private readonly recorded = new Set<string>();
  private readonly dirs = new Set<string>();
  /** Output name -> the item that delivered it first (outputPath). */
  private readonly owners = new Map<string, string>();
  /** Deliveries of all jobs in hand share the sink's round trips (a group reads its bytes at once). */
  private readonly deliveries = new Grouper<Delivery, Outcome>((ds) => this.deliver(ds), 2 * BUNDLE_MAX, (d) => d.size, HELD_BYTES);

  private constructor(private readonly opts: SinkOptions) {
    this.keys = appKeys(opts.prefix, opts.app);
    this.redis = withScripts(connectRedis(opts.redisUrl, { name: `jupiter:${opts.app}:sink` }));
    this.workerRedis = connectRedis(opts.redisUrl, { name: `jupiter:${opts.app}:sink:worker` });
  }

  static async start(opts: SinkOptions): Promise<Sink> {
    const s = new Sink(opts);
    s.settings = opts.settings ?? (await readSettings(s.redis, opts.prefix, opts.app));
    s.queues = new AppQueues(s.redis, opts.prefix, opts.app, s.settings);
    await mkdir(opts.outputDir, { recursive: true });
    await requeueHeldJobs(s.redis, s.keys.queuePrefix, SINK_QUEUE, (job, err) => stalledOut(s.failureContext, s.queues, job, err));
    s.worker = new Worker<BundleJob>(SINK_QUEUE, (job) => s.process(job), {
      connection: s.workerRedis,
      prefix: s.keys.queuePrefix,
      // Delivery is deduplicated per (item, output name), so order does not matter here: the sink
      // takes as many jobs at once as a runner may hold, and never becomes the bottleneck.
      concurrency: Math.max(1, s.settings.concurrency) + PREFETCH,
      lockDuration: s.settings.lockMs,
      stalledInterval: Math.min(s.settings.lockMs, 30_000),
      maxStalledCount: 3,
    });
    s.worker.on('error', (e) => opts.log?.(`sink worker error: ${e.message}`));
    s.worker.on('failed', (job, err) => {
      if (job && !s.recorded.delete(job.id!)) void stalledOut(s.failureContext, s.queues, job, err).catch(() => undefined);
    });
    await s.worker.waitUntilReady();
    return s;
  }

  private get failureContext(): FailureContext {
    return { redis: this.redis, keys: this.keys, settings: this.settings, task: SINK_QUEUE, node: this.opts.node ?? 'home', numInputs: 1 };
  }

  /** A job's files; one that cannot be written is retried alone, a failing Redis call fails the job. */
  private async process(job: Job<BundleJob>): Promise<void> {
    try {
      await Promise.all(job.data.d.map(async (d) => {
        const o = await this.deliveries.push(d);
        if ('error' in o) {
          const { attempt, final } = await failDelivery(this.failureContext, this.queues, d, job.timestamp, o.error, o.permanent);
          this.opts.log?.(`sink failed on ${d.name} of item ${d.item} (attempt ${attempt}${final ? ', final' : ''}): ${o.error.message}`);
        } else if (o.makespan >= 0) {
          const ev = await emitItemDone(this.redis, this.keys, this.settings.eventsMaxLen, d.item, o.makespan, o.outputs);
          this.opts.onItemDone?.(ev);
        }
      }));
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      this.recorded.add(job.id!);
      const { attempt, final } = await failJob(this.failureContext, job, err, new Set(), () => undefined);
      this.opts.log?.(`sink could not handle job ${job.id} (attempt ${attempt}): ${err.message}`);
      if (final) throw new UnrecoverableError(err.message);
      throw err;
    }
  }

  /** Small files synchronously (a thread-pool hop costs more than the write), large ones not. */
  private async write(d: Delivery, bytes: Buffer): Promise<void> {
    let owner = this.owners.get(d.name);
    if (owner === undefined) {
      owner = d.item;
      if (this.owners.size > 100_000) this.owners.clear();
      this.owners.set(d.name, owner);
    }
    const dest = outputPath(this.opts.outputDir, d.item, d.name, owner);
    const dir = dirname(dest);
    if (bytes.length > SYNC_WRITE_BYTES) {
      await mkdir(dir, { recursive: true });
      await writeFile(dest, bytes);
      return;
    }
    if (!this.dirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      if (this.dirs.size > 10_000) this.dirs.clear();
      this.dirs.add(dir);
    }
    writeFileSync(dest, bytes);
  }

  /**
   * A group of files in three round trips: look up what was delivered and read the bytes; write
   * the new files (an idempotent overwrite); then one script per file counts it delivered or a
   * duplicate, frees its blob and finishes it for its item.
   */
  private async deliver(ds: Delivery[]): Promise<Outcome[]> {
    const k = this.keys;
    const read = this.redis.pipeline();
    for (const d of ds) read.sismember(k.out(d.item), d.name).getBuffer(k.blob(d.blob));
    const got = await execOrThrow(read);
    const outcomes: Array<Outcome | undefined> = await Promise.all(ds.map(async (d, i) => {
      const [seen, bytes] = [got[2 * i] as number, got[2 * i + 1] as Buffer | null];
      if (seen) return undefined;
      if (!bytes) return { error: new Error(`output ${d.name} of item ${d.item} is no longer in Redis (blob deleted)`), permanent: true };
      try {
        await this.write(d, bytes);
        return undefined;
      } catch (e) {
        this.dirs.clear();
        return { error: e as Error, permanent: false };
      }
    }));
    const now = Date.now();
    const fin = this.redis.pipeline() as ReturnType<Redis['pipeline']> & { jDeliver(...a: Array<string | number>): unknown };
    const sent = ds.filter((_, i) => !outcomes[i]);
    for (const d of sent) fin.jDeliver(k.out(d.item), k.item(d.item), k.stats, k.pending(d.item), k.makespans, k.queued(SINK_QUEUE), d.name, now, d.id, k.blob(''), d.blob);
    const res = sent.length > 0 ? await execOrThrow(fin) : [];
    let r = 0;
    return ds.map((_, i) => {
      if (outcomes[i]) return outcomes[i]!;
      const [makespan, ...outputs] = res[r++] as Array<number | string>;
      return { makespan: Number(makespan), outputs: outputs.map(String) };
    });
  }

  async close(): Promise<void> {
    await this.worker?.close().catch(() => undefined);
    await this.queues?.close().catch(() => undefined);
    await Promise.all([this.redis.quit().catch(() => undefined), this.workerRedis.quit().catch(() => undefined)]);
  }
}
