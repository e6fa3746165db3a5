// The task runner: consumes one task's queue, collects joins, materialises inputs in an empty
// pathin, invokes the task, routes its outputs, and records what happened. A queue job carries
// a bundle of deliveries (what a sender committed at once); each is handled on its own.
// Every step is safe to repeat: a runner killed at any point is restarted, BullMQ redelivers
// the jobs it held, and the deterministic ids plus the `done` marker make the repeat harmless.
// Speed: the runner invokes the task on `concurrency` items at a time (1 = Jupiter's
// one-at-a-time) in the order they came, and for fast tasks holds a window of prefetched jobs
// beside them (BullMQ concurrency). Jobs that arrive while a Redis call is in flight share the
// next call (group commit), so a busy runner needs about one arrive and one commit round trip
// per group of items, not per item, and the group's outputs leave as one job per receiving
// task, so the next runner pays BullMQ's per-job cost once per group too. The window shrinks
// as the task gets slower, so that held jobs never wait long enough to put their locks at risk (a task that blocks the event loop
// beyond the lock makes BullMQ redeliver what the runner holds). It opens only while jobs come
// back to back (a backlog) and closes when the runner goes idle: a worker holding several jobs
// looks for the next one before it starts the first, which would cost an isolated item a
// round trip per hop. Order: the task still sees one item at a time in the order the jobs
// reach the runner, which is queue order except that two neighbours can swap where a backlog
// starts (BullMQ then fetches over two paths at once); retries, joins and parallel branches
// never kept a strict order anyway. On the direct data path a runner whose inputs come from
// other nodes also holds one job ahead (FETCH_AHEAD), so that the next item's transfer overlaps
// this one's run; and every grouped Redis call carries at most GROUP_BYTES beyond its first item,
// so a backlog on a slow link streams item by item rather than as one unit.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { UnrecoverableError, WaitingError, Worker, type Job } from '../queue/libs.js';
import type { Redis } from 'ioredis';
import type { AppSpec, TaskSpec } from '../../config/types.js';
import type { TaskEvent } from '../../config/events.js';
import { isJupiterError } from '../../config/errors.js';
import { createInvoker, type TaskInvoker } from '../invoke/invoker.js';
import { OutputPathError } from '../invoke/paths.js';
import { routeOutputs, RoutingError } from '../dag/routing.js';
import { connectRedis, endConnection } from '../queue/connection.js';
import { addEvent } from '../queue/events.js';
import { failDelivery, failJob, stalledOut, type FailureContext, type StoredInput } from '../queue/failures.js';
import { appKeys, type AppKeys } from '../queue/keys.js';
import { blobIdFor, BUNDLE_MAX, INLINE_MAX, type BundleJob } from '../queue/naming.js';
import { DataPlane, defaultDataRoot, type FetchFor } from '../dataplane/plane.js';
import { releaseBody } from '../dataplane/client.js';
import { defineLineage, lineageCall, lineageInputs, Reruns, type LineageCall, type LineageRecord } from '../dataplane/lineage.js';
import { requeueHeldJobs } from '../queue/requeue.js';
import { OrphanWatch } from '../queue/orphans.js';
import { withScripts, type ScriptedRedis } from '../queue/scripts.js';
import { readSettings, type PipelineSettings } from '../queue/settings.js';
import { AppQueues, BlobTooLargeError, type OutgoingFile, type QueuedJob } from '../queue/transport.js';
import { arriveGroup, type Arrival, type InHand } from './arrive.js';
import { Backlog } from './backlog.js';
import { commitGroup, type Settle } from './commit.js';
import { FifoGate, Grouper } from './group.js';
import { FETCH_AHEAD, GROUP_BYTES, HELD_BYTES, prefetchWindow } from './limits.js';
import { besideStore, defaultWorkRoot, openSlots, safeDir, taskWorkDir, type WorkSlot } from './work-slots.js';
import { pipeline } from '../queue/pipeline.js';
import { closeWorker, STOPPED_AWAY } from '../queue/close-worker.js';

/**
 * An input of an invocation: its bytes, or (direct path, the blob in a store on this machine)
 * the file to copy into the work folder (bytes then empty).
 */
type InputPair = { inp: StoredInput; bytes: Buffer; file?: string };

export { defaultWorkRoot } from './work-slots.js';

/** An item running longer than this announces its start at once (dashboards show it running). */
export const RUNNING_EVENT_AFTER_MS = 100;

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
  /**
   * Connections shared with the other runners of one process (a node host): the runner uses
   * them and leaves them open on close. Without them it opens its own two.
   */
  shared?: { redis: Redis; workerRedis: Redis };
  /** Where the task's Python worker writes its output (a file descriptor; default: the runner's stderr). */
  taskStderr?: number;
  /** Direct data path: this node's store folder (default: under the work root, per app and node). */
  dataDir?: string;
}

/** Errors that a retry cannot fix go straight to the dead letters. */
export function isPermanent(e: unknown): boolean {
  return e instanceof UnrecoverableError || e instanceof OutputPathError || e instanceof RoutingError ||
    e instanceof BlobTooLargeError || (isJupiterError(e) && e.kind === 'input');
}

/** ms since epoch with µs resolution (per-hop latencies are well under a millisecond). */
export const nowMs = (): number => Math.round((performance.timeOrigin + performance.now()) * 1000) / 1000;

/** Thrown for a delivery that had not started when the runner began to stop. */
const STOPPING = new Error('runner stopping');

/** `p`, or a rejection once `redis` has ended (closed for good). */
function failOnEnd<T>(p: Promise<T>, redis: Redis): Promise<T> {
  let onEnd = (): void => undefined;
  const ended = new Promise<never>((_, reject) => {
    onEnd = () => reject(new Error('Connection is closed.'));
    if (redis.status === 'end') onEnd();
    else redis.once('end', onEnd);
  });
  return Promise.race([p, ended]).finally(() => redis.off('end', onEnd));
}

export class TaskRunner {
  private worker?: Worker<BundleJob>;
  private orphans?: OrphanWatch;
  /** Ids of the jobs in the processor (running or waiting for a slot). */
  private readonly jobsInHand = new Set<string>();
  private invoker?: TaskInvoker;
  private readonly redis: ScriptedRedis;
  private readonly workerRedis: Redis;
  private queues?: AppQueues;
  /** The direct data path (settings.dataPath `direct`): this node's store and data endpoint. */
  private plane?: DataPlane;
  /** Lineage re-runs of this task's lost outputs (direct path). */
  private reruns?: Reruns;
  private settings!: PipelineSettings;
  private readonly keys: AppKeys;
  /** Jobs whose failure the processor already handled (the `failed` event must not repeat it). */
  private readonly recorded = new Set<string>();
  private readonly log: (msg: string) => void;
  private slots: WorkSlot[] = [];
  private closing = false;
  /** Running means of the task's run time (ms) and of deliveries per job; the prefetch window. */
  private meanMs?: number;
  private meanBundle = 1;
  private window = 0;
  /** Running mean of the time an item's inputs took to come from other nodes (direct path). */
  private meanFetchMs = 0;
  /** Jobs held to fetch ahead: FETCH_AHEAD while inputs come from other nodes, else 0. */
  private fetchAhead = 0;
  /** Whether jobs come back to back (the window is open only then). */
  private readonly backlog = new Backlog(() => this.applyWindow());
  private slotGate!: FifoGate;
  private readonly heldBytes = new FifoGate(HELD_BYTES);
  /** Jobs a dead runner held that have not been through here yet (one job at a time till then). */
  private suspects = new Set<string>();
  private carefulTimer?: NodeJS.Timeout;
  /** Deliveries in hand by id (the latest copy's handling). */
  private readonly handling = new Map<string, Promise<void>>();
  // Inputs kept on other nodes are not read by the arrive call (only their pointers are).
  private readonly arrivals = new Grouper<InHand, Arrival>((h) => this.arrive(h), BUNDLE_MAX, (h) => (h.d.src ? 0 : h.d.size ?? 0), GROUP_BYTES);
  private readonly settles = new Grouper<Settle, number>((s) => this.settle(s), BUNDLE_MAX, (s) => (s.kind === 'run' ? s.bytes : 0), GROUP_BYTES);

  private constructor(private readonly opts: TaskRunnerOptions) {
    this.keys = appKeys(opts.prefix, opts.app.name);
    this.redis = withScripts(opts.shared?.redis ?? connectRedis(opts.redisUrl, { name: `jupiter:${opts.app.name}:${opts.task.name}` }));
    this.workerRedis = opts.shared?.workerRedis ?? connectRedis(opts.redisUrl, { name: `jupiter:${opts.app.name}:${opts.task.name}:worker` });
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

  /** The runner's command connection (not its worker's blocking one), for watchers of its own. */
  get connection(): Redis {
    return this.redis;
  }

  get invokerPid(): number | undefined {
    return this.invoker?.pid;
  }

  private get failureContext(): FailureContext {
    const { task, node } = this.opts;
    return { redis: this.redis, keys: this.keys, settings: this.settings, task: task.name, node, numInputs: task.numInputs };
  }

  private async init(): Promise<void> {
    const { app, task } = this.opts;
    this.settings = this.opts.settings ?? (await readSettings(this.redis, this.opts.prefix, app.name));
    this.queues = new AppQueues(this.redis, this.opts.prefix, app.name, this.settings);
    let storeDir: string | undefined;
    if (this.settings.dataPath === 'direct') {
      const dir = this.opts.dataDir ?? join(defaultDataRoot(defaultWorkRoot(), this.opts.prefix, app.name), safeDir(this.opts.node));
      defineLineage(this.redis);
      this.plane = await DataPlane.producer({ redis: this.redis, keys: this.keys, settings: this.settings, node: this.opts.node, dir, log: this.log, batchNotes: true });
      storeDir = dir;
      this.reruns = new Reruns({ redis: this.redis, keys: this.keys, task: task.name, node: this.opts.node, log: this.log, run: (rec) => this.rerun(rec) }).start();
    }
    this.invoker = await createInvoker(app, task, this.opts.node, { stderr: this.opts.taskStderr });
    const work = this.opts.workDir ?? taskWorkDir(defaultWorkRoot(), app.name, task.name);
    const parent = storeDir ? besideStore(work, storeDir, safeDir(task.name)) : work;
    this.slots = openSlots(parent, this.settings.concurrency);
    this.slotGate = new FifoGate(this.settings.concurrency);
    // Each task has one runner: jobs still held in its queue belong to a runner that died, and
    // go back to waiting now instead of when their locks expire.
    const back = await requeueHeldJobs(this.redis, this.keys.queuePrefix, task.name, (job, err) => stalledOut(this.failureContext, this.queues!, job, err));
    if (back.moved + back.split > 0) this.log(`took back ${back.moved + back.split} job(s) held by a previous runner of ${task.name}${back.split ? ` (${back.split} split into jobs of one file)` : ''}`);
    if (back.givenUp > 0) this.log(`gave up ${back.givenUp} job(s) whose runners kept dying while holding them: dead letters`);
    // One of the jobs the dead runner held may be what killed it: until each has been through
    // here, hold one job at a time, so that only the guilty one is held (and counted) at a crash.
    this.suspects = new Set(back.suspects);
    if (this.suspects.size > 0) {
      this.carefulTimer = setTimeout(() => {
        this.suspects.clear();
        this.applyWindow();
      }, 2 * this.settings.lockMs);
      this.carefulTimer.unref();
    }
    this.worker = new Worker<BundleJob>(task.name, (job, token) => this.process(job, token), {
      connection: this.workerRedis,
      prefix: this.keys.queuePrefix,
      // Jobs held: the ones running plus the prefetched ones waiting for a slot (none until
      // the first item shows how long the task takes).
      concurrency: this.suspects.size > 0 ? 1 : this.settings.concurrency,
      lockDuration: this.settings.lockMs,
      stalledInterval: Math.min(this.settings.lockMs, 30_000),
      maxStalledCount: 3,
    });
    this.worker.on('error', (e) => this.log(`worker error: ${e.message}`));
    this.worker.on('failed', (job, err) => {
      // Jobs failed outside our processor (stalled too often) still get their dead letters.
      if (job && !this.recorded.delete(job.id!)) {
        void stalledOut(this.failureContext, this.queues!, job, err).catch((e: Error) => this.log(`cannot record failure: ${e.message}`));
      }
    });
    // BullMQ waits for the worker's blocking connection (its own) to be ready, for ever while Redis
    // is gone; a runner whose shared connection its owner ended meanwhile (an overhead probe round
    // abandoned, profilers/overhead/round.ts) fails instead, and start() closes it.
    await failOnEnd(this.worker.waitUntilReady(), this.workerRedis);
    this.orphans = new OrphanWatch({ connection: this.workerRedis, queuePrefix: this.keys.queuePrefix, queue: task.name, workerId: this.worker.id, inHand: (id) => this.jobsInHand.has(id), log: this.log });
  }

  private event(type: TaskEvent['type'], item: string, ts: number, extra: Partial<TaskEvent> = {}): TaskEvent {
    return { type, app: this.opts.app.name, task: this.opts.task.name, node: this.opts.node, item, ts, ...extra };
  }

  /**
   * One job: its deliveries go through arrive, run and commit like any others (grouped with
   * those of the other jobs in hand). A delivery the task fails on is retried alone; a failing
   * Redis call fails the whole job, and BullMQ retries it (what it finished meanwhile is
   * recognised as done then).
   */
  private async process(job: Job<BundleJob>, token?: string): Promise<void> {
    this.backlog.enter();
    this.jobsInHand.add(job.id!);
    const ds = job.data.d;
    this.meanBundle = 0.8 * this.meanBundle + 0.2 * ds.length;
    const ahead = ds.some((d) => d.src !== undefined && d.src !== this.opts.node) ? FETCH_AHEAD : 0;
    if (ahead !== this.fetchAhead) {
      this.fetchAhead = ahead;
      this.applyWindow();
    }
    const handled = new Set<string>();
    try {
      const outcomes = await Promise.allSettled(ds.map(async (d) => {
        await this.handle({ job, d, at: job.timestamp });
        handled.add(d.id);
      }));
      if (outcomes.some((o) => o.status === 'rejected' && o.reason === STOPPING)) {
        // Back to the queue untouched (no attempt used): a stop waits only for the items
        // actually running. If the job cannot be moved (its lock is gone), it is redelivered
        // once the lock expires.
        await job.moveToWait(token).catch(() => undefined);
        throw new WaitingError();
      }
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed) throw failed.reason;
    } catch (e) {
      if (e instanceof WaitingError) throw e;
      const err = e instanceof Error ? e : new Error(String(e));
      this.recorded.add(job.id!);
      const { attempt, final } = await failJob(this.failureContext, job, err, handled, this.log);
      this.log(`task ${this.opts.task.name} could not handle job ${job.id} (${ds.length} file(s), attempt ${attempt}${final ? ', final' : ''}): ${err.message}`);
      if (final && !(err instanceof UnrecoverableError)) throw new UnrecoverableError(err.message);
      throw err;
    } finally {
      if (this.suspects.delete(job.id!) && this.suspects.size === 0) {
        clearTimeout(this.carefulTimer);
        this.applyWindow();
      }
      this.jobsInHand.delete(job.id!);
      this.backlog.leave();
    }
  }

  private arrive(group: InHand[]): Promise<Arrival[]> {
    return arriveGroup(this.redis, this.keys, this.opts.task, group, this.opts.node);
  }

  /**
   * A second copy of a delivery this runner already has in hand (a re-sent outbox can reach the
   * queue while the first copy still waits there) waits for the first, then finds the task done
   * for the item: the task runs once, not once per copy.
   */
  private async handle(h: InHand): Promise<void> {
    const earlier = this.handling.get(h.d.id);
    const mine = (earlier ? earlier.catch(() => undefined) : Promise.resolve()).then(() => this.handleOne(h, earlier !== undefined));
    this.handling.set(h.d.id, mine);
    try {
      await mine;
    } finally {
      if (this.handling.get(h.d.id) === mine) this.handling.delete(h.d.id);
    }
  }

  private async handleOne(h: InHand, copy: boolean): Promise<void> {
    // Input bytes held by this runner stay bounded however many deliveries it has in hand.
    const size = h.d.size ?? 0;
    await this.heldBytes.take(size);
    try {
      const arrival = (copy ? undefined : this.inlineArrival(h)) ?? (await this.arrivals.push(h));
      let settle: Settle;
      if (arrival.kind === 'dup') {
        // A copy of something this task already did for the item. If this very job was started
        // before (a runner died holding it), the adds after its commit may not have happened:
        // re-send the outbox (ids are deterministic; receivers drop what they already had).
        const outbox = h.job.attemptsStarted > 1 && arrival.outbox.startsWith('[') ? (JSON.parse(arrival.outbox) as QueuedJob[]) : [];
        settle = { ...h, kind: 'dup', outbox };
      } else if (arrival.kind === 'wait') {
        settle = { ...h, kind: 'wait' };
      } else {
        let pairs = arrival.pairs;
        try {
          // Direct path: inputs kept on other nodes come over here before a slot is taken, so
          // the next item's transfer overlaps this one's run.
          const t0 = nowMs();
          pairs = await this.fetchInputs(pairs, { queue: this.opts.task.name });
          if (h.d.src) this.meanFetchMs = 0.8 * this.meanFetchMs + 0.2 * (nowMs() - t0);
        } catch (e) {
          await this.fail(h, e instanceof Error ? e : new Error(String(e)));
          return;
        }
        // The commit is already under way; the slot was emptied meanwhile. (An item that
        // finishes here gets its item-done event from the commit script itself.)
        await this.runInSlot(h, pairs);
        return;
      }
      await this.settles.push(settle);
    } finally {
      this.heldBytes.give(size);
    }
  }

  /** Inputs whose bytes another node keeps (direct path), fetched from there. */
  private async fetchInputs(pairs: InputPair[], why: FetchFor = {}): Promise<InputPair[]> {
    if (!pairs.some((p) => p.inp.src)) return pairs;
    const plane = await this.readerPlane();
    return Promise.all(pairs.map(async (p) => {
      if (!p.inp.src) return p;
      const got = await plane.take(p.inp.src, p.inp.blob, why);
      // A lineage re-run may have made the bytes anew: their size is what was fetched.
      if (got.file !== undefined) return { inp: { ...p.inp, size: got.size }, bytes: Buffer.alloc(0), file: got.file };
      return { inp: { ...p.inp, size: got.bytes.length }, bytes: got.bytes };
    }));
  }

  private async readerPlane(): Promise<DataPlane> {
    return this.plane ?? (this.plane = await DataPlane.reader({ redis: this.redis, keys: this.keys, settings: this.settings, node: this.opts.node, log: this.log, batchNotes: true }));
  }

  /**
   * An input kept in a store on this machine, copied into the work folder by the kernel; fetched
   * instead when its file went meanwhile (a lineage re-run moved the blob).
   */
  private async copyIn(p: InputPair & { file: string }, dest: string): Promise<void> {
    try {
      await copyFile(p.file, dest);
      if (p.inp.size === undefined || statSync(dest).size === p.inp.size) return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    const bytes = await (await this.readerPlane()).fetch(p.inp.src!, p.inp.blob);
    writeFileSync(dest, bytes);
    releaseBody(bytes);
  }

  /**
   * Lineage (circe/dataplane/lineage.ts): run the task again on the inputs of a lost invocation;
   * its outputs go to this node's store and nowhere else. Returns the blobs it kept.
   */
  private async rerun(rec: LineageRecord): Promise<string[]> {
    const pairs = await this.fetchInputs(await lineageInputs(this.redis, this.keys, rec), { suspect: true });
    await this.slotGate.take();
    const slot = this.slots.find((s) => !s.busy)!;
    slot.busy = true;
    try {
      const d = { id: `rerun:${rec.item}`, item: rec.item, name: '', blob: '', from: '', size: 0 };
      await this.execute({ job: undefined as unknown as Job<BundleJob>, d, at: nowMs() }, pairs, slot, true);
    } finally {
      this.freeSlot(slot);
    }
    return rec.outs.filter((o) => this.plane!.holds(o));
  }

  /**
   * A first copy of a small single-input delivery runs at once on the bytes it carries: the
   * arrive round trip is only for joins, large files and copies that may be duplicates (a job
   * taken again, a re-sent outbox, a retry). The commit still refuses a run the task already
   * committed for the item (the enter time is recorded there too).
   */
  private inlineArrival(h: InHand): Arrival | undefined {
    const { d } = h;
    if (this.opts.task.numInputs !== 1 || d.inline === undefined || d.resent || d.tries || h.job.attemptsStarted > 1) return undefined;
    const inp: StoredInput = { id: d.id, name: d.name, blob: d.blob, from: d.from, at: h.at, size: d.size };
    return { kind: 'run', pairs: [{ inp, bytes: Buffer.from(d.inline, 'base64') }] };
  }

  /**
   * Run the task on one item in a free work slot (slots are handed out in arrival order) and
   * commit it; resolves with the item's makespan (-1 while it is in flight). The slot is free
   * again as soon as the outputs are read, so the next item runs while this one's commit is in
   * flight, and the items finished meanwhile share the next commit (and leave as one job). A
   * failure of the task is the delivery's alone: it is retried after a backoff, or buried.
   */
  private async runInSlot(h: InHand, pairs: InputPair[]): Promise<number> {
    await this.slotGate.take();
    if (this.closing) {
      this.slotGate.give();
      throw STOPPING;
    }
    const slot = this.slots.find((s) => !s.busy)!;
    slot.busy = true;
    let settle: Settle;
    try {
      settle = await this.execute(h, pairs, slot);
    } catch (e) {
      this.freeSlot(slot);
      await this.fail(h, e instanceof Error ? e : new Error(String(e)));
      return -1;
    }
    // Queued for commit before the slot is emptied: an idle runner's commit goes out first.
    const committed = this.settles.push(settle);
    this.freeSlot(slot);
    return committed;
  }

  private freeSlot(slot: WorkSlot): void {
    slot.reset();
    slot.busy = false;
    this.slotGate.give();
  }

  private async fail(h: InHand, err: Error): Promise<void> {
    const { attempt, final } = await failDelivery(this.failureContext, this.queues!, h.d, h.at, err, isPermanent(err));
    this.log(`task ${this.opts.task.name} failed on item ${h.d.item} (attempt ${attempt}${final ? ', final' : ''}): ${err.message}`);
  }

  private async execute(h: InHand, pairs: InputPair[], slot: WorkSlot, rerun = false): Promise<Settle> {
    const { task } = this.opts;
    const T = task.name;
    const { d } = h;
    pairs.sort((a, b) => a.inp.at - b.inp.at || a.inp.name.localeCompare(b.inp.name));
    const inputs = pairs.map((p) => p.inp);
    const names = inputs.map((i) => i.name);
    const dupName = names.find((n, i) => names.indexOf(n) !== i);
    if (dupName) throw new UnrecoverableError(`two inputs of item ${d.item} for task ${T} are both named ${dupName}; the sending tasks must give their outputs distinct names`);

    const { pathin, pathout } = slot;
    for (const p of pairs) {
      const { inp, bytes } = p;
      const dest = join(pathin, basename(inp.name));
      slot.known.push(dest);
      if (p.file !== undefined) {
        await this.copyIn({ ...p, file: p.file }, dest);
        continue;
      }
      if (bytes.length !== inp.size && inp.size !== undefined) {
        // Retried, not final: after a Redis restart a sender's blob can trail its job briefly.
        throw new Error(`input ${inp.name} of item ${d.item} is not (or no longer) in Redis (blob ${inp.blob})`);
      }
      // Small synchronous file operations: no thread-pool hop per call.
      writeFileSync(dest, bytes);
    }
    // Fetched bodies go back to the data plane's buffers (nothing reads them after this).
    for (const p of pairs) releaseBody(p.bytes);

    const start = nowMs();
    // Fast items report enter/start/finish together at commit (no extra round trip). An item
    // still running after RUNNING_EVENT_AFTER_MS announces itself now, so watchers see it run.
    let announced = false;
    const announce = setTimeout(() => {
      announced = true;
      const pipe = pipeline(this.redis);
      addEvent(pipe, this.keys, this.settings.eventsMaxLen, this.event('enter', d.item, h.at));
      addEvent(pipe, this.keys, this.settings.eventsMaxLen, this.event('start', d.item, start));
      pipe.exec().catch(() => undefined); // telemetry only: never fail the item for it
    }, RUNNING_EVENT_AFTER_MS);
    const outputs = await this.invoker!.invoke(names, pathin, pathout).finally(() => {
      clearTimeout(announce);
      this.adapt(nowMs() - start);
    });
    const finish = nowMs();
    slot.known.push(...outputs);

    const routes = routeOutputs(task, outputs.length);
    // Direct path: what does not travel inline stays here until its receivers take it, moved
    // from its file into the store without being read (plane.putFile).
    const plane = this.plane;
    const keeps = (size: number, to: string[]): boolean => size > INLINE_MAX && size <= this.settings.maxBlobBytes && to.length > 0;
    const files: Array<OutgoingFile & { path: string; size: number }> = routes.map((r) => {
      const path = outputs[r.output]!;
      const size = plane ? statSync(path).size : -1;
      return { name: basename(path), bytes: plane && keeps(size, r.to) ? Buffer.alloc(0) : readFileSync(path), to: r.to, path, size };
    });
    let lineage: LineageCall | undefined;
    const kept: string[] = [];
    if (plane) {
      // Inputs this node's store keeps go when this run commits: its outputs never wait for room
      // (store.ts room).
      const freesInputs = inputs.some((i) => i.src === this.opts.node);
      for (const f of files) {
        if (!keeps(f.size, f.to)) continue;
        kept.push(blobIdFor(d.item, T, f.name));
        f.bytes = await plane.putFile(kept[kept.length - 1]!, f.path, f.size, { freesInputs });
        f.stored = { node: this.opts.node, size: f.size };
      }
      // How they were made, so that they can be made again if this node is lost: recorded in the
      // commit's pipeline, ahead of the commit (commit.ts).
      if (!rerun) lineage = lineageCall(this.keys, { task: T, item: d.item, node: this.opts.node, inputs, outs: kept });
    }
    const outNames = files.map((f) => f.name);
    const clash = outNames.find((n, i) => outNames.indexOf(n) !== i);
    if (clash) throw new RoutingError(`task ${T} returned two outputs named ${clash} for item ${d.item}`);
    const { jobs, outputs: nOut, stageArgs, staged } = this.queues!.prepare(d.item, T, files);
    return { ...h, kind: 'run', inputs, names, start, finish, jobs, outputs: nOut, stageArgs, staged, bytes: files.reduce((a, f) => a + f.bytes.length, 0), announced, lineage, stored: kept };
  }

  /** Resize the prefetch window after an invocation that took `ms`. */
  private adapt(ms: number): void {
    this.meanMs = this.meanMs === undefined ? ms : 0.8 * this.meanMs + 0.2 * ms;
    // The window counts jobs: a job holds meanBundle items on average. An item's turn lasts its
    // run or its inputs' transfer from another node, whichever is longer (they overlap), so a
    // slow link shrinks the window as a slow task does: held jobs stay bounded in time.
    const turn = Math.max(this.meanMs, this.meanFetchMs);
    this.window = prefetchWindow(Math.max(ms, this.meanFetchMs), turn * Math.max(1, this.meanBundle), this.settings.lockMs);
    this.applyWindow();
  }

  /** Jobs BullMQ may hand over: the ones that run, plus the window while there is a backlog. */
  private applyWindow(): void {
    const c = this.suspects.size > 0 ? 1 : this.settings.concurrency + Math.max(this.backlog.active ? this.window : 0, this.fetchAhead);
    if (this.worker && !this.closing && this.worker.concurrency !== c) this.worker.concurrency = c;
  }

  private async settle(group: Settle[]): Promise<number[]> {
    const plane = this.plane;
    const out = await commitGroup({
      redis: this.redis, keys: this.keys, queues: this.queues!, settings: this.settings, task: this.opts.task.name, node: this.opts.node, event: (...a) => this.event(...a),
      rideAlong: plane ? (pipe) => plane.flushNotes(pipe) : undefined,
    }, group);
    // The records of what these runs kept here exist now (or never will: a refused run), so their
    // files may go as soon as the receivers took them (store.ts).
    plane?.committed(group.flatMap((s) => (s.kind === 'run' ? s.stored : [])));
    return out;
  }

  /** Finish the items running, return the prefetched jobs to the queue, then stop (SIGTERM path). */
  async close(): Promise<void> {
    this.closing = true;
    this.backlog.stop();
    clearTimeout(this.carefulTimer);
    await this.orphans?.stop();
    if (!(await closeWorker(this.worker, this.workerRedis))) this.log(STOPPED_AWAY);
    await this.queues?.close().catch(() => undefined);
    await this.invoker?.close().catch(() => undefined);
    await this.reruns?.stop().catch(() => undefined);
    await this.plane?.close().catch(() => undefined);
    for (const s of this.slots) s.remove();
    if (this.opts.shared) return;
    await Promise.all([endConnection(this.redis), endConnection(this.workerRedis)]);
  }
}
