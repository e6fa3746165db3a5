// The task runner: consumes one task's queue, collects joins, materialises inputs in an empty
// pathin, invokes the task, routes its outputs, and records what happened.
// Every step is safe to repeat: a runner killed at any point is restarted, BullMQ redelivers
// the jobs it held, and the deterministic ids plus the `done` marker make the repeat harmless.
// Speed: the runner invokes the task on `concurrency` items at a time (1 = Jupiter's
// one-at-a-time) in the order they came, and for fast tasks holds a window of prefetched jobs
// beside them (BullMQ concurrency). Jobs that arrive while a Redis call is in flight share the
// next call (group commit), so a busy runner needs about one arrive and one commit round trip
// per group of items, not per item. The window shrinks as the task gets slower, so that held
// jobs never wait long enough to put their locks at risk (a task that blocks the event loop
// beyond the lock makes BullMQ redeliver what the runner holds). It opens only while jobs come
// back to back (a backlog) and closes when the runner goes idle: a worker holding several jobs
// looks for the next one before it starts the first, which would cost an isolated item a
// round trip per hop. Order: the task still sees one item at a time in the order the jobs
// reach the runner, which is queue order except that two neighbours can swap where a backlog
// starts (BullMQ then fetches over two paths at once); retries, joins and parallel branches
// never kept a strict order anyway.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { UnrecoverableError, WaitingError, Worker, type Job } from 'bullmq';
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
import { FifoGate, Grouper } from './group.js';
import { defaultWorkRoot, openSlots, type WorkSlot } from './work-slots.js';

export { defaultWorkRoot } from './work-slots.js';

/** Most jobs a runner holds beyond the ones it runs: enough to keep Redis round trips overlapped. */
export const PREFETCH = 32;

/** An item running longer than this announces its start at once (dashboards show it running). */
export const RUNNING_EVENT_AFTER_MS = 100;

/** A job that comes within this long of the previous one's end means the queue has a backlog. */
const BACKLOG_GAP_MS = 2;
/** Idle this long: the window closes. */
const IDLE_MS = 50;

/**
 * Prefetch window after an item took `lastMs` with a running mean of `meanMs`: held jobs wait
 * about window x mean, kept under an eighth of the lock; none after an item that took longer.
 */
export function prefetchWindow(lastMs: number, meanMs: number, lockMs: number): number {
  if (lastMs > lockMs / 8) return 0;
  return Math.max(0, Math.min(PREFETCH, Math.floor(lockMs / 8 / Math.max(meanMs, 0.1))));
}
/** Most items per arrive or commit call. */
const MAX_GROUP = 64;
/** Input bytes a runner holds at once (at least one item, whatever its size). */
const HELD_BYTES = 64 * 1024 * 1024;

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

/** ms since epoch with µs resolution (per-hop latencies are well under a millisecond). */
export const nowMs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000) / 1000;

const safeDir = (s: string): string => s.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80);

type Arrival =
  | { kind: 'dup'; outbox: string }
  | { kind: 'wait' }
  | { kind: 'run'; pairs: Array<{ inp: StoredInput; bytes: Buffer }> };

/** What a job leaves to the commit group: its run's results, or only its finish. */
type Settle =
  | { kind: 'run'; job: Job<ItemJob>; inputs: StoredInput[]; names: string[]; start: number; finish: number; jobs: QueuedJob[]; outputs: number; stageArgs: Array<string | Buffer | number>; bytes: number; announced: boolean }
  | { kind: 'dup'; job: Job<ItemJob>; outbox: QueuedJob[] }
  | { kind: 'wait'; job: Job<ItemJob> };

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
  private slots: WorkSlot[] = [];
  private closing = false;
  /** Running mean of the task's run time (ms) and the prefetch window it allows. */
  private meanMs?: number;
  private window = 0;
  /** Jobs in hand; when the runner last had none; whether jobs come back to back. */
  private inHand = 0;
  private freeAt = -Infinity;
  private backlog = false;
  private idleTimer?: NodeJS.Timeout;
  private slotGate!: FifoGate;
  private readonly heldBytes = new FifoGate(HELD_BYTES);
  private readonly arrivals = new Grouper<Job<ItemJob>, Arrival>((jobs) => this.arrive(jobs), MAX_GROUP);
  private readonly settles = new Grouper<Settle, number>((s) => this.settle(s), MAX_GROUP, (s) => (s.kind === 'run' ? s.bytes : 0), HELD_BYTES);

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
    const parent = this.opts.workDir ?? join(defaultWorkRoot(), 'jupiter-work', safeDir(app.name), safeDir(task.name));
    this.slots = openSlots(parent, this.settings.concurrency);
    this.slotGate = new FifoGate(this.settings.concurrency);
    this.worker = new Worker<ItemJob>(task.name, (job, token) => this.process(job, token), {
      connection: this.workerRedis,
      prefix: this.keys.queuePrefix,
      // Jobs held: the ones running plus the prefetched ones waiting for a slot (none until
      // the first item shows how long the task takes).
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

  private async process(job: Job<ItemJob>, token?: string): Promise<void> {
    this.inHand++;
    clearTimeout(this.idleTimer);
    if (this.inHand === 1 && !this.backlog && nowMs() - this.freeAt < BACKLOG_GAP_MS) {
      this.backlog = true;
      this.applyWindow();
    }
    try {
      await this.handle(job, token);
    } catch (e) {
      if (e instanceof WaitingError) throw e;
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
    } finally {
      if (--this.inHand === 0) {
        this.freeAt = nowMs();
        this.idleTimer = setTimeout(() => {
          this.backlog = false;
          this.applyWindow();
        }, IDLE_MS);
        this.idleTimer.unref();
      }
    }
  }

  /** One arrive call for a group of jobs: the verdict of each, with the inputs of runnable ones. */
  private async arrive(jobs: Array<Job<ItemJob>>): Promise<Arrival[]> {
    const T = this.opts.task.name;
    const k = this.keys;
    const keys: string[] = [];
    const args: Array<string | number> = [this.opts.task.numInputs, `${T}|enter`, k.blob('')];
    for (const job of jobs) {
      const d = job.data;
      const mine: StoredInput = { id: job.id!, name: d.name, blob: d.blob, from: d.from, at: job.timestamp, size: d.size };
      keys.push(k.done(T, d.item), k.join(T, d.item), k.rt(d.item), k.blob(d.blob));
      args.push(job.id!, JSON.stringify(mine), job.timestamp);
    }
    const res = await this.redis.jArriveBuffer(keys.length, ...keys, ...args);
    return res.map((r): Arrival => {
      const verdict = r[0]!.toString();
      if (verdict === 'dup') return { kind: 'dup', outbox: r[1]?.toString() ?? '' };
      if (verdict === 'wait') return { kind: 'wait' };
      const pairs: Array<{ inp: StoredInput; bytes: Buffer }> = [];
      for (let i = 1; i + 1 < r.length; i += 2) pairs.push({ inp: JSON.parse(r[i]!.toString()) as StoredInput, bytes: r[i + 1]! });
      return { kind: 'run', pairs };
    });
  }

  private async handle(job: Job<ItemJob>, token?: string): Promise<void> {
    // Input bytes held by this runner stay bounded however many jobs it has prefetched.
    const size = job.data.size ?? 0;
    await this.heldBytes.take(size);
    try {
      const arrival = await this.arrivals.push(job);
      let settle: Settle;
      if (arrival.kind === 'dup') {
        // A copy of something this task already did for the item. If this very job was started
        // before (a runner died holding it), the adds after its commit may not have happened:
        // re-add the outbox (ids are deterministic; receivers drop what they already had).
        const outbox = job.attemptsStarted > 1 && arrival.outbox.startsWith('[') ? (JSON.parse(arrival.outbox) as QueuedJob[]) : [];
        settle = { kind: 'dup', job, outbox };
      } else if (arrival.kind === 'wait') {
        settle = { kind: 'wait', job };
      } else {
        // The commit is already under way; the slot was emptied meanwhile.
        await this.maybeDone(job.data.item, await this.runInSlot(job, arrival.pairs, token));
        return;
      }
      await this.maybeDone(job.data.item, await this.settles.push(settle));
    } finally {
      this.heldBytes.give(size);
    }
  }

  /**
   * Run the task on one item in a free work slot (slots are handed out in arrival order) and
   * commit it; resolves with the item's makespan (-1 while it is in flight). When
   * the runner is stopping, a prefetched job that has not started goes back to its queue
   * untouched (no attempt used), so a stop waits only for the items actually running.
   */
  private async runInSlot(job: Job<ItemJob>, pairs: Array<{ inp: StoredInput; bytes: Buffer }>, token?: string): Promise<number> {
    await this.slotGate.take();
    if (this.closing && token) {
      this.slotGate.give();
      // If the job cannot be moved (its lock is gone), it is redelivered once the lock expires.
      await job.moveToWait(token).catch(() => undefined);
      throw new WaitingError();
    }
    const slot = this.slots.find((s) => !s.busy)!;
    slot.busy = true;
    try {
      return this.settles.push(await this.execute(job, pairs, slot));
    } finally {
      // Emptied after the commit and the adds are on their way (they carry the item onward).
      setImmediate(() => {
        slot.reset();
        slot.busy = false;
        this.slotGate.give();
      });
    }
  }

  private async execute(job: Job<ItemJob>, pairs: Array<{ inp: StoredInput; bytes: Buffer }>, slot: WorkSlot): Promise<Settle> {
    const { task } = this.opts;
    const T = task.name;
    const d = job.data;
    pairs.sort((a, b) => a.inp.at - b.inp.at || a.inp.name.localeCompare(b.inp.name));
    const inputs = pairs.map((p) => p.inp);
    const names = inputs.map((i) => i.name);
    const dupName = names.find((n, i) => names.indexOf(n) !== i);
    if (dupName) throw new UnrecoverableError(`two inputs of item ${d.item} for task ${T} are both named ${dupName}; the sending tasks must give their outputs distinct names`);

    const { pathin, pathout } = slot;
    for (const { inp, bytes } of pairs) {
      if (bytes.length !== inp.size && inp.size !== undefined) {
        // Retried, not final: after a Redis restart a sender's blob can trail its job briefly.
        throw new Error(`input ${inp.name} of item ${d.item} is not (or no longer) in Redis (blob ${inp.blob})`);
      }
      // Small synchronous file operations: no thread-pool hop per call.
      writeFileSync(join(pathin, basename(inp.name)), bytes);
    }

    const start = nowMs();
    // Fast items report enter/start/finish together at commit (no extra round trip). An item
    // still running after RUNNING_EVENT_AFTER_MS announces itself now, so watchers see it run.
    let announced = false;
    const announce = setTimeout(() => {
      announced = true;
      const pipe = this.redis.pipeline();
      addEvent(pipe, this.keys, this.settings.eventsMaxLen, this.event('enter', d.item, job.timestamp));
      addEvent(pipe, this.keys, this.settings.eventsMaxLen, this.event('start', d.item, start));
      pipe.exec().catch(() => undefined); // telemetry only: never fail the item for it
    }, RUNNING_EVENT_AFTER_MS);
    const outputs = await this.invoker!.invoke(names, pathin, pathout).finally(() => {
      clearTimeout(announce);
      this.adapt(nowMs() - start);
    });
    const finish = nowMs();

    const routes = routeOutputs(task, outputs.length);
    const files: OutgoingFile[] = routes.map((r) => ({ name: basename(outputs[r.output]!), bytes: readFileSync(outputs[r.output]!), to: r.to }));
    const outNames = files.map((f) => f.name);
    const clash = outNames.find((n, i) => outNames.indexOf(n) !== i);
    if (clash) throw new RoutingError(`task ${T} returned two outputs named ${clash} for item ${d.item}`);
    const { jobs, outputs: nOut, stageArgs } = this.queues!.prepare(d.item, T, files);
    return { kind: 'run', job, inputs, names, start, finish, jobs, outputs: nOut, stageArgs, bytes: files.reduce((a, f) => a + f.bytes.length, 0), announced };
  }

  /** Resize the prefetch window after an invocation that took `ms`. */
  private adapt(ms: number): void {
    this.meanMs = this.meanMs === undefined ? ms : 0.8 * this.meanMs + 0.2 * ms;
    this.window = prefetchWindow(ms, this.meanMs, this.settings.lockMs);
    this.applyWindow();
  }

  /** Jobs BullMQ may hand over: the ones that run, plus the window while there is a backlog. */
  private applyWindow(): void {
    const c = this.settings.concurrency + (this.backlog ? this.window : 0);
    if (this.worker && !this.closing && this.worker.concurrency !== c) this.worker.concurrency = c;
  }

  /**
   * One round trip for a group of finished jobs: one commit script for the items that ran
   * (outputs, done markers, runtimes, events, freed inputs), the finishes of duplicates and
   * join inputs that wait, and the adds of every output job right behind them on the same
   * connection. Returns each item's makespan (-1 while the item is still in flight).
   */
  private async settle(group: Settle[]): Promise<number[]> {
    const { node } = this.opts;
    const T = this.opts.task.name;
    const k = this.keys;
    const maxLen = this.settings.eventsMaxLen;
    const pipe = this.redis.pipeline() as ScriptedPipeline & { jCommit(...a: Array<string | number | Buffer>): ScriptedPipeline };
    const runs = group.filter((s): s is Extract<Settle, { kind: 'run' }> => s.kind === 'run');
    const adds: QueuedJob[] = [];
    if (runs.length > 0) {
      const keys: string[] = [k.stats, k.events, k.makespans];
      const args: Array<string | number | Buffer> = [this.settings.doneTtlSec, T, node, maxLen, Date.now(), k.blob('')];
      for (const r of runs) {
        const item = r.job.data.item;
        keys.push(k.done(T, item), k.join(T, item), k.rt(item), k.pending(item), k.item(item));
        const events = [
          ...(r.announced ? [] : [this.event('enter', item, r.job.timestamp), this.event('start', item, r.start)]),
          this.event('finish', item, r.finish, { durationMs: r.finish - r.start }),
        ];
        args.push(r.start, r.finish, r.names.join(';'), r.job.id!, JSON.stringify(r.jobs), events.length, ...events.map((e) => JSON.stringify(e)));
        args.push(r.inputs.length, ...r.inputs.flatMap((inp) => [inp.blob, inp.id]));
        args.push(r.outputs, ...r.stageArgs);
        adds.push(...r.jobs);
      }
      pipe.jCommit(keys.length, ...keys, ...args);
    }
    const now = Date.now();
    for (const s of group) {
      if (s.kind === 'run') continue;
      const d = s.job.data;
      if (s.kind === 'dup') {
        adds.push(...s.outbox);
        pipe.jRelease(k.blob(''), d.blob, s.job.id!);
        pipe.hincrby(k.stats, `dup:${T}`, 1);
      } else {
        addEvent(pipe, k, maxLen, this.event('enter', d.item, s.job.timestamp));
      }
      pipe.jFinish(k.pending(d.item), k.item(d.item), k.stats, k.makespans, s.job.id!, now);
    }
    // Sent together on one connection: Redis runs the commit before the adds.
    const [out] = await Promise.all([execOrThrow(pipe), adds.length > 0 ? this.queues!.enqueue(adds) : undefined]);
    let at = 0;
    const committed = runs.length > 0 ? (out[at++] as number[]) : [];
    let r = 0;
    return group.map((s) => {
      if (s.kind === 'run') return Number(committed[r++]);
      at += s.kind === 'dup' ? 3 : 2;
      return Number(out[at - 1]);
    });
  }

  private async maybeDone(item: string, makespan: number): Promise<void> {
    if (makespan >= 0) await emitItemDone(this.redis, this.keys, this.settings.eventsMaxLen, item, makespan);
  }

  private recordFailure(job: Job<ItemJob>, err: Error, attempt: number, final: boolean): Promise<void> {
    const { task, node } = this.opts;
    return recordFailure({ redis: this.redis, keys: this.keys, settings: this.settings, task: task.name, node, numInputs: task.numInputs }, job, err, attempt, final);
  }

  /** Finish the items running, return the prefetched jobs to the queue, then stop (SIGTERM path). */
  async close(): Promise<void> {
    this.closing = true;
    clearTimeout(this.idleTimer);
    await this.worker?.close().catch(() => undefined);
    await this.queues?.close().catch(() => undefined);
    await this.invoker?.close().catch(() => undefined);
    for (const s of this.slots) s.remove();
    await Promise.all([this.redis.quit().catch(() => undefined), this.workerRedis.quit().catch(() => undefined)]);
  }
}
