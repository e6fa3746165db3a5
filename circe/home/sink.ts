// The home's sink: consumes the `home` queue, writes each output once into the run's output
// folder and finishes items. Delivery is exactly-once per (item id, output name): the file is
// written first, then the name is added to the item's delivered set; a redelivered or duplicated
// job finds its name there, or its file already there (a small one, created only if absent, when
// a sink died between the write and the count), and is only counted as suppressed.
import { mkdirSync, writeFileSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { UnrecoverableError, Worker, type Job } from '../queue/libs.js';
import type { Redis } from 'ioredis';
import type { ItemDoneEvent } from '../../config/events.js';
import { connectRedis, endConnection } from '../queue/connection.js';
import { itemDoneEvent } from '../queue/events.js';
import { failDelivery, failJob, stalledOut, type FailureContext, type ScriptedPipeline } from '../queue/failures.js';
import { appKeys, quietKeys, SINK_QUEUE, type AppKeys } from '../queue/keys.js';
import { BUNDLE_MAX, LUA_BYTES_MAX, type BundleJob, type Delivery } from '../queue/naming.js';
import { requeueHeldJobs } from '../queue/requeue.js';
import { OrphanWatch } from '../queue/orphans.js';
import { withScripts, type ScriptedRedis } from '../queue/scripts.js';
import { readSettings, type PipelineSettings } from '../queue/settings.js';
import { AppQueues, execOrThrow } from '../queue/transport.js';
import { Grouper } from '../runner/group.js';
import { DataPlane } from '../dataplane/plane.js';
import { HELD_BYTES, PREFETCH } from '../runner/limits.js';
import { Backlog } from '../runner/backlog.js';
import { pipeline } from '../queue/pipeline.js';
import { closeWorker, STOPPED_AWAY } from '../queue/close-worker.js';

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
 * The file an output becomes in the output folder: flat, `<name>`, as in the original's home
 * `/output` folder (Jupiter's naming keeps names unique per job). `owner` is the item that wrote
 * that name first into this folder (AppKeys.owners): when another item delivers the same name
 * (possible only when one job id was submitted twice), its file is `<name>.<item>`, so nothing is
 * overwritten. The item's delivered set (and so its item-done event, `status` and the tables of
 * `deploy` and `submit`) holds the files so named: each names the file it is.
 */
export function outputFile(item: string, name: string, owner: string | undefined = item): string {
  return owner === item ? name : `${name}.${item}`;
}

/** Where an output lands: `<outputDir>/<outputFile>`. */
export function outputPath(outputDir: string, item: string, name: string, owner: string | undefined = item): string {
  return join(outputDir, outputFile(item, name, owner));
}

/** What delivering one file came to: the item's makespan when it finished it, or the error. */
type Outcome = { makespan: number; outputs: string[]; at: number } | { error: Error; permanent: boolean };

/** What the look before a write found for one file (Sink.look). */
type Look = { kind: 'phantom' } | { kind: 'seen'; owner: string } | { kind: 'new'; owner: string; bytes: Buffer | null };

/** Files up to this size are written synchronously. */
const SYNC_WRITE_BYTES = 1024 * 1024;

export class Sink {
  private worker?: Worker<BundleJob>;
  private orphans?: OrphanWatch;
  /** Ids of the jobs in the processor. */
  private readonly jobsInHand = new Set<string>();
  private readonly redis: ScriptedRedis;
  private readonly workerRedis: Redis;
  private settings!: PipelineSettings;
  private queues!: AppQueues;
  /** Direct data path: fetches outputs from the nodes that keep them. */
  private plane?: DataPlane;
  private readonly keys: AppKeys;
  private readonly recorded = new Set<string>();
  private readonly dirs = new Set<string>();
  private readonly backlog = new Backlog(() => this.applyWindow());
  private closing = false;
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
      // One job at a time while the stream is quiet (see Backlog), else as many as a runner may
      // hold: delivery is deduplicated per (item, output name), so order does not matter here,
      // and the sink never becomes the bottleneck.
      concurrency: 1,
      lockDuration: s.settings.lockMs,
      stalledInterval: Math.min(s.settings.lockMs, 30_000),
      maxStalledCount: 3,
    });
    s.worker.on('error', (e) => opts.log?.(`sink worker error: ${e.message}`));
    s.worker.on('failed', (job, err) => {
      if (job && !s.recorded.delete(job.id!)) void stalledOut(s.failureContext, s.queues, job, err).catch(() => undefined);
    });
    await s.worker.waitUntilReady();
    s.orphans = new OrphanWatch({ connection: s.workerRedis, queuePrefix: s.keys.queuePrefix, queue: SINK_QUEUE, workerId: s.worker.id, inHand: (id) => s.jobsInHand.has(id), log: opts.log });
    return s;
  }

  private get failureContext(): FailureContext {
    return { redis: this.redis, keys: this.keys, settings: this.settings, task: SINK_QUEUE, node: this.opts.node ?? 'home', numInputs: 1 };
  }

  /** A job's files; one that cannot be written is retried alone, a failing Redis call fails the job. */
  private async process(job: Job<BundleJob>): Promise<void> {
    this.backlog.enter();
    this.jobsInHand.add(job.id!);
    try {
      await this.processJob(job);
    } finally {
      this.jobsInHand.delete(job.id!);
      this.backlog.leave();
    }
  }

  /** Jobs held: one while the stream is quiet, a runner's window while jobs come back to back. */
  private applyWindow(): void {
    const c = this.backlog.active ? Math.max(1, this.settings.concurrency) + PREFETCH : 1;
    if (this.worker && !this.closing && this.worker.concurrency !== c) this.worker.concurrency = c;
  }

  private async processJob(job: Job<BundleJob>): Promise<void> {
    try {
      await Promise.all(job.data.d.map(async (d) => {
        const o = await this.deliveries.push(d);
        if ('error' in o) {
          const { attempt, final } = await failDelivery(this.failureContext, this.queues, d, job.timestamp, o.error, o.permanent);
          this.opts.log?.(`sink failed on ${d.name} of item ${d.item} (attempt ${attempt}${final ? ', final' : ''}): ${o.error.message}`);
        } else if (o.makespan >= 0) {
          // The deliver script appended the item-done event already; this is the same event.
          this.opts.onItemDone?.(itemDoneEvent(this.keys.app, d.item, o.makespan, o.outputs, o.at));
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
  private async write(d: Delivery, bytes: Buffer, owner: string, exclusive = false): Promise<void> {
    const dest = outputPath(this.opts.outputDir, d.item, d.name, owner);
    const dir = dirname(dest);
    const flag = exclusive ? 'wx' : 'w';
    if (bytes.length > SYNC_WRITE_BYTES) {
      await mkdir(dir, { recursive: true });
      await writeFile(dest, bytes, { flag });
      return;
    }
    if (!this.dirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      if (this.dirs.size > 10_000) this.dirs.clear();
      this.dirs.add(dir);
    }
    try {
      writeFileSync(dest, bytes, { flag });
    } catch (e) {
      // Exclusive: an earlier copy wrote the file already; it stands.
      if (!exclusive || (e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }

  /**
   * Direct path: the record is a pointer. A blob in a store on this machine has its file copied
   * to the output by the kernel; otherwise (or when the file went meanwhile: a lineage re-run
   * moved the blob) its bytes come from the node that keeps them.
   */
  private async writeKept(d: Delivery, owner: string): Promise<void> {
    const plane = await this.dataPlane();
    const got = await plane.take(d.src!, d.blob, { queue: SINK_QUEUE });
    if (got.file !== undefined) {
      const dest = outputPath(this.opts.outputDir, d.item, d.name, owner);
      await mkdir(dirname(dest), { recursive: true });
      try {
        await copyFile(got.file, dest);
        return;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    await this.write(d, got.bytes ?? (await plane.fetch(d.src!, d.blob)), owner, d.inline !== undefined);
  }

  /**
   * One round trip looks at a group of files (scripts.ts LOOK): a phantom (never stored, see
   * PHANTOM_FN), a file the item delivered already, or a new file with the owner of its plain
   * path (in Redis: a restarted sink must not give a second item the name) and, for a large
   * file, its bytes.
   */
  private async look(ds: Delivery[]): Promise<Look[]> {
    const k = this.keys;
    const keys: string[] = [k.owners];
    const args: string[] = [];
    // A large file's bytes come from a plain GET right behind the script (cheaper for Redis than
    // through Lua); its blob stays until this delivery is finished.
    const apart = ds.map((d) => !d.src && d.inline === undefined && d.size > LUA_BYTES_MAX);
    ds.forEach((d, i) => {
      keys.push(k.out(d.item), k.blob(d.blob), k.done(d.from, d.item));
      args.push(d.name, outputPath(this.opts.outputDir, d.item, d.name), d.id, d.item, d.inline === undefined && !apart[i] ? '1' : '0');
    });
    const looked = this.redis.jLookBuffer(keys.length, ...keys, ...args);
    const gets = ds.map((d, i) => (apart[i] ? this.redis.getBuffer(k.blob(d.blob)) : undefined));
    const [res, got] = await Promise.all([looked, Promise.all(gets)]);
    return res.map((r, i): Look => {
      const verdict = r[0]!.toString();
      if (verdict === 'phantom') return { kind: 'phantom' };
      if (verdict === '1') return { kind: 'seen', owner: r[1]!.toString() };
      const inline = ds[i]!.inline;
      const blob = apart[i] ? got[i] ?? Buffer.alloc(0) : r[2]!;
      return { kind: 'new', owner: r[1]!.toString(), bytes: inline === undefined ? (blob.length > 0 ? blob : null) : Buffer.from(inline, 'base64') };
    });
  }

  /**
   * A group of files: one look (above); each new file is written; then one script per file
   * counts it delivered or a duplicate, frees its blob and finishes it for its item (a phantom
   * is only finished and counted a duplicate). A small file (bytes inline) is created only if
   * absent, so the first copy's file stands and a later copy is only counted; its write is a
   * single write() call, which a killed sink cannot leave half done.
   */
  private async deliver(ds: Delivery[]): Promise<Outcome[]> {
    const k = this.keys;
    const looks = await this.look(ds);
    const outcomes: Array<Outcome | undefined> = await Promise.all(ds.map(async (d, i) => {
      const l = looks[i]!;
      if (l.kind !== 'new') return undefined;
      if (!l.bytes) return { error: new Error(`output ${d.name} of item ${d.item} is no longer in Redis (blob deleted)`), permanent: true };
      try {
        if (d.src) await this.writeKept(d, l.owner);
        else await this.write(d, l.bytes, l.owner, d.inline !== undefined);
        return undefined;
      } catch (e) {
        this.dirs.clear();
        return { error: e as Error, permanent: false };
      }
    }));
    const now = Date.now();
    const fin = pipeline(this.redis) as ScriptedPipeline & { jDeliver(...a: Array<string | number>): unknown };
    // Reply index of each file's finish (a phantom's follows its counter).
    const at: number[] = [];
    let n = 0;
    ds.forEach((d, i) => {
      if (outcomes[i]) return;
      const l = looks[i]!;
      if (l.kind === 'phantom') {
        fin.hincrby(k.stats, 'dupSuppressed', 1);
        fin.jFinish(k.pending(d.item), k.item(d.item), k.stats, k.makespans, k.queued(SINK_QUEUE), d.id, now, this.settings.eventsMaxLen, k.app);
        n += 2;
      } else {
        fin.jDeliver(k.out(d.item), k.item(d.item), k.stats, k.pending(d.item), k.makespans, k.queued(SINK_QUEUE), outputFile(d.item, d.name, l.owner), now, d.id, k.blob(''), d.blob, this.settings.eventsMaxLen, k.app);
        n += 1;
      }
      at[i] = n - 1;
    });
    // Ridden along last (its reply is not read): see scripts.ts QUIET.
    if (n > 0) fin.jQuiet(...quietKeys(k, SINK_QUEUE));
    const res = n > 0 ? await execOrThrow(fin) : [];
    return ds.map((_, i) => {
      if (outcomes[i]) return outcomes[i]!;
      const reply = res[at[i]!];
      // A phantom's finish returns the makespan alone (it never delivers a name).
      const [makespan, ...outputs] = Array.isArray(reply) ? (reply as Array<number | string>) : [reply as number];
      return { makespan: Number(makespan), outputs: outputs.map(String), at: now };
    });
  }

  private async dataPlane(): Promise<DataPlane> {
    this.plane ??= await DataPlane.reader({ redis: this.redis, keys: this.keys, settings: this.settings, node: this.opts.node ?? 'home', log: this.opts.log ?? (() => undefined) });
    return this.plane;
  }

  async close(): Promise<void> {
    this.closing = true;
    this.backlog.stop();
    await this.orphans?.stop();
    if (!(await closeWorker(this.worker, this.workerRedis))) this.opts.log?.(STOPPED_AWAY);
    await this.queues?.close().catch(() => undefined);
    await Promise.all([endConnection(this.redis), endConnection(this.workerRedis)]);
  }
}
