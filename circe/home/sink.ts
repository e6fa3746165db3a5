// The home's sink: consumes the `home` queue, writes each output once into the run's output
// folder and finishes items. Delivery is exactly-once per (item id, output name): the file is
// written first (an idempotent overwrite), then the name is added to the item's delivered set;
// a redelivered or duplicated job finds its name there and is only counted as suppressed.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ItemDoneEvent } from '../../config/events.js';
import { connectRedis } from '../queue/connection.js';
import { emitItemDone } from '../queue/events.js';
import { recordFailure } from '../queue/failures.js';
import { appKeys, SINK_QUEUE, type AppKeys } from '../queue/keys.js';
import { jobPrefix, type ItemJob } from '../queue/naming.js';
import { withScripts, type ScriptedRedis } from '../queue/scripts.js';
import { readSettings, type PipelineSettings } from '../queue/settings.js';
import { execOrThrow } from '../queue/transport.js';
import { PREFETCH } from '../runner/task-runner.js';

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
 * Where an output lands: flat when its name carries the item's job prefix (Jupiter's naming),
 * else under a folder per item so that equal names of different items cannot collide.
 */
export function outputPath(outputDir: string, item: string, name: string): string {
  return jobPrefix(name) === item ? join(outputDir, name) : join(outputDir, item, name);
}

export class Sink {
  private worker?: Worker<ItemJob>;
  private readonly redis: ScriptedRedis;
  private readonly workerRedis: Redis;
  private settings!: PipelineSettings;
  private readonly keys: AppKeys;
  private readonly recorded = new Set<string>();

  private constructor(private readonly opts: SinkOptions) {
    this.keys = appKeys(opts.prefix, opts.app);
    this.redis = withScripts(connectRedis(opts.redisUrl, { name: `jupiter:${opts.app}:sink` }));
    this.workerRedis = connectRedis(opts.redisUrl, { name: `jupiter:${opts.app}:sink:worker` });
  }

  static async start(opts: SinkOptions): Promise<Sink> {
    const s = new Sink(opts);
    s.settings = opts.settings ?? (await readSettings(s.redis, opts.prefix, opts.app));
    await mkdir(opts.outputDir, { recursive: true });
    s.worker = new Worker<ItemJob>(SINK_QUEUE, (job) => s.process(job), {
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
      if (job && !s.recorded.delete(job.id!)) void s.fail(job, err, job.attemptsMade, true).catch(() => undefined);
    });
    await s.worker.waitUntilReady();
    return s;
  }

  private fail(job: Job<ItemJob>, err: Error, attempt: number, final: boolean): Promise<void> {
    return recordFailure({ redis: this.redis, keys: this.keys, settings: this.settings, task: SINK_QUEUE, node: this.opts.node ?? 'home', numInputs: 1 }, job, err, attempt, final);
  }

  private async process(job: Job<ItemJob>): Promise<void> {
    try {
      await this.deliver(job);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      const attempt = job.attemptsMade + 1;
      const final = err instanceof UnrecoverableError || attempt >= (job.opts.attempts ?? 1);
      this.opts.log?.(`sink failed on ${job.data.name} of item ${job.data.item}: ${err.message}`);
      await this.fail(job, err, attempt, final).then(() => this.recorded.add(job.id!), () => undefined);
      throw final && !(err instanceof UnrecoverableError) ? new UnrecoverableError(err.message) : err;
    }
  }

  private async deliver(job: Job<ItemJob>): Promise<void> {
    const d = job.data;
    const k = this.keys;
    const [seen, bytes] = (await execOrThrow(this.redis.pipeline().sismember(k.out(d.item), d.name).getBuffer(k.blob(d.blob)))) as [number, Buffer | null];
    if (!seen) {
      if (!bytes) throw new UnrecoverableError(`output ${d.name} of item ${d.item} is no longer in Redis (blob deleted)`);
      const dest = outputPath(this.opts.outputDir, d.item, d.name);
      await mkdir(dirname(dest), { recursive: true });
      await writeFile(dest, bytes);
    }
    // One script: count delivered-or-duplicate, free the blob, finish the job for its item.
    const [makespan, ...outputs] = await this.redis.jDeliver(k.out(d.item), k.item(d.item), k.stats, k.pending(d.item), k.makespans, d.name, Date.now(), job.id!, k.blob(''), d.blob);
    if (Number(makespan) >= 0) {
      const ev = await emitItemDone(this.redis, k, this.settings.eventsMaxLen, d.item, Number(makespan), outputs.map(String));
      this.opts.onItemDone?.(ev);
    }
  }

  async close(): Promise<void> {
    await this.worker?.close().catch(() => undefined);
    await Promise.all([this.redis.quit().catch(() => undefined), this.workerRedis.quit().catch(() => undefined)]);
  }
}
