// The task runner: consumes one task's queue, collects joins, materialises inputs in a fresh
// per-item pathin, invokes the task, routes its outputs, and records what happened.
// Every step is safe to repeat: a runner killed at any point is restarted, BullMQ redelivers
// the job it held, and the deterministic ids plus the `done` marker make the repeat harmless.
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statfsSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { AppSpec, TaskSpec } from '../../config/types.js';
import type { TaskEvent } from '../../config/events.js';
import { isJupiterError } from '../../config/errors.js';
import { createInvoker, type TaskInvoker } from '../invoke/invoker.js';
import { OutputPathError } from '../invoke/paths.js';
import { routeOutputs, RoutingError } from '../dag/routing.js';
import { connectRedis } from '../queue/connection.js';
import { addEvent, emitItemDone } from '../queue/events.js';
import { recordFailure, type ScriptedPipeline, type StoredInput } from '../queue/failures.js';
import { appKeys, type AppKeys } from '../queue/keys.js';
import type { ItemJob } from '../queue/naming.js';
import { withScripts, type ScriptedRedis } from '../queue/scripts.js';
import { readSettings, type PipelineSettings } from '../queue/settings.js';
import { AppQueues, BlobTooLargeError, execOrThrow, type OutgoingFile, type QueuedJob } from '../queue/transport.js';

export interface TaskRunnerOptions {
  app: AppSpec;
  task: TaskSpec;
  node: string;
  redisUrl: string;
  prefix: string;
  /** Parent folder of the per-item work folders (default: <tmp>/jupiter-work/<app>/<task>). */
  workDir?: string;
  /** Overrides the app's stored settings (tests). */
  settings?: PipelineSettings;
  log?: (msg: string) => void;
}

/** Errors that a retry cannot fix go straight to the dead letters. */
export function isPermanent(e: unknown): boolean {
  return e instanceof UnrecoverableError || e instanceof OutputPathError || e instanceof RoutingError ||
    e instanceof BlobTooLargeError || (isJupiterError(e) && e.kind === 'input');
}

/**
 * Per-item folders live on a RAM file system when there is a roomy one (/dev/shm): creating and
 * removing two folders per item on a journaled disk costs milliseconds, on tmpfs microseconds.
 */
export function defaultWorkRoot(): string {
  try {
    const st = statfsSync('/dev/shm');
    accessSync('/dev/shm', constants.W_OK);
    if (st.bavail * st.bsize >= 1024 ** 3) return '/dev/shm';
  } catch {
    // no /dev/shm here
  }
  return tmpdir();
}

/** Remove an item's folder: plain unlink/rmdir for the usual flat layout, rm -r otherwise. */
function removeWorkDir(dir: string, subdirs: string[]): void {
  try {
    for (const sub of subdirs) {
      for (const f of readdirSync(sub)) unlinkSync(join(sub, f));
      rmdirSync(sub);
    }
    rmdirSync(dir);
  } catch {
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // a task that left unremovable files behind must not fail the item
    }
  }
}

/** ms since epoch with µs resolution (per-hop latencies are well under a millisecond). */
export const nowMs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000) / 1000;

const safeDir = (s: string): string => s.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80);

export class TaskRunner {
  private worker?: Worker<ItemJob>;
  private invoker?: TaskInvoker;
  private readonly redis: ScriptedRedis;
  private readonly workerRedis: Redis;
  private queues?: AppQueues;
  private settings!: PipelineSettings;
  private readonly keys: AppKeys;
  private readonly recorded = new Set<string>();
  private readonly log: (msg: string) => void;
  private readonly workRoot = defaultWorkRoot();

  private constructor(private readonly opts: TaskRunnerOptions) {
    this.keys = appKeys(opts.prefix, opts.app.name);
    this.redis = withScripts(connectRedis(opts.redisUrl, { name: `jupiter:${opts.app.name}:${opts.task.name}` }));
    this.workerRedis = connectRedis(opts.redisUrl, { name: `jupiter:${opts.app.name}:${opts.task.name}:worker` });
    this.log = opts.log ?? (() => undefined);
  }

  static async start(opts: TaskRunnerOptions): Promise<TaskRunner> {
    const r = new TaskRunner(opts);
    try {
      await r.init();
    } catch (e) {
      await r.close();
      throw e;
    }
    return r;
  }

  get invokerPid(): number | undefined {
    return this.invoker?.pid;
  }

  private async init(): Promise<void> {
    const { app, task } = this.opts;
    this.settings = this.opts.settings ?? (await readSettings(this.redis, this.opts.prefix, app.name));
    this.queues = new AppQueues(this.redis, this.opts.prefix, app.name, this.settings);
    this.invoker = await createInvoker(app, task);
    this.worker = new Worker<ItemJob>(task.name, (job) => this.process(job), {
      connection: this.workerRedis,
      prefix: this.keys.queuePrefix,
      concurrency: this.settings.concurrency,
      lockDuration: this.settings.lockMs,
      stalledInterval: Math.min(this.settings.lockMs, 30_000),
      maxStalledCount: 3,
    });
    this.worker.on('error', (e) => this.log(`worker error: ${e.message}`));
    this.worker.on('failed', (job, err) => {
      // Jobs failed outside our processor (stalled too often) still get their dead letter.
      if (job && !this.recorded.delete(job.id!)) {
        void this.recordFailure(job, err, job.attemptsMade, true).catch((e: Error) => this.log(`cannot record failure: ${e.message}`));
      }
    });
    await this.worker.waitUntilReady();
  }

  private event(type: TaskEvent['type'], item: string, ts: number, extra: Partial<TaskEvent> = {}): TaskEvent {
    return { type, app: this.opts.app.name, task: this.opts.task.name, node: this.opts.node, item, ts, ...extra };
  }

  private async process(job: Job<ItemJob>): Promise<void> {
    try {
      await this.handle(job);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      const attempt = job.attemptsMade + 1;
      const final = isPermanent(err) || attempt >= (job.opts.attempts ?? 1);
      this.log(`task ${this.opts.task.name} failed on item ${job.data.item} (attempt ${attempt}${final ? ', final' : ''}): ${err.message}`);
      try {
        await this.recordFailure(job, err, attempt, final);
        this.recorded.add(job.id!);
      } catch (re) {
        this.log(`cannot record failure: ${(re as Error).message}`);
      }
      if (final && !(err instanceof UnrecoverableError)) throw new UnrecoverableError(err.message);
      throw err;
    }
  }

  private async handle(job: Job<ItemJob>): Promise<void> {
    const { task, node } = this.opts;
    const T = task.name;
    const d = job.data;
    const k = this.keys;
    const mine: StoredInput = { id: job.id!, name: d.name, blob: d.blob, from: d.from, at: job.timestamp, size: d.size };
    const res = await this.redis.jArriveBuffer(k.done(T, d.item), k.join(T, d.item), k.rt(d.item), job.id!, JSON.stringify(mine), task.numInputs, `${T}|enter`, job.timestamp, k.blob(''));
    const maxLen = this.settings.eventsMaxLen;
    const verdict = res[0]!.toString();

    if (verdict === 'dup' || verdict === 'wait') {
      const pipe = this.redis.pipeline() as ScriptedPipeline;
      if (verdict === 'dup') {
        // A copy of something this task already did for the item. If this very job was started
        // before (a runner died holding it), the adds after its commit may not have happened:
        // re-add the outbox (ids are deterministic; receivers drop what they already had).
        const outbox = res[1]?.toString() ?? '';
        if (job.attemptsStarted > 1 && outbox.startsWith('[')) await this.queues!.enqueue(JSON.parse(outbox) as QueuedJob[]);
        pipe.jRelease(k.blob(''), d.blob, job.id!);
        pipe.hincrby(k.stats, `dup:${T}`, 1);
      } else {
        addEvent(pipe, k, maxLen, this.event('enter', d.item, job.timestamp));
      }
      pipe.jFinish(k.pending(d.item), k.item(d.item), k.stats, k.makespans, job.id!, Date.now());
      const out = await execOrThrow(pipe);
      await this.maybeDone(d.item, out[out.length - 1] as number);
      return;
    }

    const pairs: Array<{ inp: StoredInput; bytes: Buffer }> = [];
    for (let i = 1; i + 1 < res.length; i += 2) pairs.push({ inp: JSON.parse(res[i]!.toString()) as StoredInput, bytes: res[i + 1]! });
    pairs.sort((a, b) => a.inp.at - b.inp.at || a.inp.name.localeCompare(b.inp.name));
    const inputs = pairs.map((p) => p.inp);
    const names = inputs.map((i) => i.name);
    const dupName = names.find((n, i) => names.indexOf(n) !== i);
    if (dupName) throw new UnrecoverableError(`two inputs of item ${d.item} for task ${T} are both named ${dupName}; the sending tasks must give their outputs distinct names`);

    const dir = join(this.opts.workDir ?? join(this.workRoot, 'jupiter-work', safeDir(this.opts.app.name), safeDir(T)), `${safeDir(d.item)}-${job.id!.slice(1, 11)}-${job.attemptsStarted}`);
    const pathin = join(dir, 'input');
    const pathout = join(dir, 'output');
    try {
      // Small synchronous file operations: one item at a time, and no thread-pool hop per call.
      mkdirSync(dir, { recursive: true });
      mkdirSync(pathin);
      mkdirSync(pathout);
      for (const { inp, bytes } of pairs) {
        if (bytes.length !== inp.size && inp.size !== undefined) {
          // Retried, not final: after a Redis restart a sender's blob can trail its job briefly.
          throw new Error(`input ${inp.name} of item ${d.item} is not (or no longer) in Redis (blob ${inp.blob})`);
        }
        writeFileSync(join(pathin, basename(inp.name)), bytes);
      }

      const start = nowMs();
      const outputs = await this.invoker!.invoke(names, pathin, pathout);
      const finish = nowMs();

      const routes = routeOutputs(task, outputs.length);
      const files: OutgoingFile[] = routes.map((r) => ({ name: basename(outputs[r.output]!), bytes: readFileSync(outputs[r.output]!), to: r.to }));
      const outNames = files.map((f) => f.name);
      const clash = outNames.find((n, i) => outNames.indexOf(n) !== i);
      if (clash) throw new RoutingError(`task ${T} returned two outputs named ${clash} for item ${d.item}`);
      const { jobs, stageArgs } = this.queues!.prepare(d.item, T, files);

      // One script stores the outputs, marks the task done for the item (keeping the outbox)
      // and frees the inputs; the adds follow on the same connection in the same round trip.
      const events = [
        this.event('enter', d.item, job.timestamp),
        this.event('start', d.item, start),
        this.event('finish', d.item, finish, { durationMs: finish - start }),
      ].map((e) => JSON.stringify(e));
      const committed = this.redis.jCommit(
        k.done(T, d.item), k.join(T, d.item), k.rt(d.item), k.stats, k.events, k.pending(d.item), k.item(d.item), k.makespans,
        this.settings.doneTtlSec, T, start, finish, node, names.join(';'), maxLen, Date.now(), job.id!, k.blob(''), JSON.stringify(jobs),
        events.length, ...events, inputs.length, ...inputs.flatMap((inp) => [inp.blob, inp.id]), ...stageArgs,
      );
      const [makespan] = await Promise.all([committed, this.queues!.enqueue(jobs)]);
      await this.maybeDone(d.item, makespan);
    } finally {
      removeWorkDir(dir, [pathin, pathout]);
    }
  }

  private async maybeDone(item: string, makespan: number): Promise<void> {
    if (makespan >= 0) await emitItemDone(this.redis, this.keys, this.settings.eventsMaxLen, item, makespan);
  }

  private recordFailure(job: Job<ItemJob>, err: Error, attempt: number, final: boolean): Promise<void> {
    const { task, node } = this.opts;
    return recordFailure({ redis: this.redis, keys: this.keys, settings: this.settings, task: task.name, node, numInputs: task.numInputs }, job, err, attempt, final);
  }

  /** Finish the job in hand, then stop (SIGTERM path). */
  async close(): Promise<void> {
    await this.worker?.close().catch(() => undefined);
    await this.queues?.close().catch(() => undefined);
    await this.invoker?.close().catch(() => undefined);
    await Promise.all([this.redis.quit().catch(() => undefined), this.workerRedis.quit().catch(() => undefined)]);
  }
}
