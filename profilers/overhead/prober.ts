// The node's control costs and its links to the home, measured by the agent (issue 12), so the
// mapper's model prices what a run really pays besides the tasks' own time and the transfers:
// - hop: an empty BullMQ job added to a queue of the deployment's Redis until a worker on this node
//   has it (the queue machinery every delivery goes through, the node's link to Redis included),
//   plus the sender's commit round trip (a script call);
// - invoke: what a runner pays around one task call: an empty call through circe's persistent
//   Python worker (its pipe protocol) plus the runner's two script round trips to Redis (taking
//   the inputs, committing the outputs);
// - the home's links: SET and GET of two blob sizes on the home's Redis (the source hop's bytes
//   come from there, the sink hop's go there), fitted to latency + bytes / bandwidth per direction.
// - local hop (local-hop-probe.ts): what a hop between two tasks on this node costs per byte beyond
//   the empty one on the direct data path (1 MiB against an inline payload, through real runners);
//   in the last early round (30 s: past the start of an agent, when the agents of a testbed all
//   start together) and then in every TASK_PROBE_EVERY-th, the task probe's slow cadence.
// The fastest of a few probes per round; rounds at start, 10 s and 30 s later (an agent starts while its
// host is busy starting everything else), then every `everyMs`; what is published is the median of
// the last 5 rounds, so one round under a passing load does not move the model. Published as `overhead:<node>` and the fits
// `link:<node>:home:fit` / `link:home:<node>:fit` (read by orchestrator/profiles/read.ts).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Keys } from '../../config/redis-keys.js';
import { HOME, type LinkProfile, type NodeOverhead } from '../../config/types.js';
import { Queue, Worker, type Redis } from '../../circe/queue/libs.js';
import { closeWorker, CLOSE_GIVE_UP_MS } from '../../circe/queue/close-worker.js';
import { PythonWorker } from '../../circe/invoke/python.js';
import { measureTaskCost } from './task-probe.js';
import { measureLocalHop } from './local-hop-probe.js';
import { median } from './median.js';
import { ProbeRound, type KeyCleanup } from './round.js';
import { removeScratch, scratchDir, sweepScratchDirs } from './scratch-dir.js';

export interface OverheadOptions {
  /** ms between measurements (the first runs at start). */
  everyMs: number;
  /** Probes per figure (medians). */
  samples: number;
  /** Blob sizes of the home-link probes, bytes (two: the fit needs a slope). */
  homeProbeBytes: [number, number];
  /** A round still going after this many ms is abandoned (ROUND_DEADLINE_MS). */
  roundDeadlineMs: number;
}

/**
 * A round's bound. A round took 0.4-3 s on a 2-core host at a load of ~9 (1.4 s with the task probe,
 * 2.8 s with the local hop one); one still going after a minute is not measuring a working node
 * (the deployment's Redis gone mid-probe, a probe stuck), and a minute is the rounds' default
 * period, so a stuck round costs at most the next one.
 */
export const ROUND_DEADLINE_MS = 60_000;
/**
 * How long an abandoned round gets to close what it opened: a runner's close gives up on an
 * unreachable Redis after CLOSE_GIVE_UP_MS, and a Python worker is killed 2 s after its input ends.
 */
const UNWIND_MS = CLOSE_GIVE_UP_MS + 3000;
/** What stop spends removing the keys abandoned rounds left (a few small deletes on a Redis that answers). */
const LEFTOVERS_MS = 2000;

export const defaultOverheadOptions = (): OverheadOptions => ({ everyMs: 60_000, samples: 7, homeProbeBytes: [16 * 1024, 256 * 1024], roundDeadlineMs: ROUND_DEADLINE_MS });

/** Seconds of `fn`, timed. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/** Latency + bandwidth through two (size, seconds) medians; a non-increasing pair gives bandwidth from the larger alone. */
export function fitTwo(small: number, tSmall: number, big: number, tBig: number): { latencySec: number; bandwidthBytesPerSec: number } {
  if (tBig > tSmall && big > small) {
    const bw = (big - small) / (tBig - tSmall);
    return { latencySec: Math.max(0, tSmall - small / bw), bandwidthBytesPerSec: bw };
  }
  return { latencySec: 0, bandwidthBytesPerSec: big / Math.max(tBig, 1e-6) };
}

/** Remove the hop probe's queue (every key of it). */
async function dropQueue(redis: Redis, name: string, prefix: string): Promise<void> {
  const queue = new Queue(name, { connection: redis, prefix });
  queue.on('error', () => undefined);
  try {
    await queue.obliterate({ force: true });
  } finally {
    await queue.close().catch(() => undefined);
  }
}

/**
 * One measurement of this node's hop and invocation costs. Its connections and the keys it makes
 * are `round`'s (round.ts): abandoning the round ends it, whatever Redis does.
 */
export async function measureOverhead(redis: Redis, keys: Keys, node: string, samples: number, opts: { task?: boolean; localHop?: boolean; round?: ProbeRound } = {}): Promise<NodeOverhead> {
  const round = opts.round ?? new ProbeRound();
  const script = 'return 1';
  const rtt: number[] = [];
  for (let i = 0; i < samples; i++) rtt.push(await timed(() => redis.eval(script, 0)));
  // The fastest of a round's probes counts, as the execution profile takes a task's fastest call:
  // the agents of a machine probe at the same moments (their early rounds start with them) and run
  // their task probes (~0.3 s of CPU each) then, so a round's median measured their own contention.
  // On the edge-fog-cloud testbed (7 hosts, one machine) the medians gave hop + invocation 18-24 ms
  // where an item's hops took 8-13 ms (bench/results/fidelity-quota-pooled*.json).
  const roundTrip = Math.min(...rtt);

  // BullMQ: the worker's own blocking connection, as a runner's.
  const name = `overhead-${node}-${process.pid}`;
  const prefix = `${keys.prefix}probe`;
  // BullMQ leaves connections it was given open: ours to close.
  const conns = [round.connect(redis, { maxRetriesPerRequest: null }), round.connect(redis, { maxRetriesPerRequest: null })];
  const label = `queue ${prefix}:${name}`;
  round.made(label, (r) => dropQueue(r, name, prefix));
  const queue = new Queue(name, { connection: conns[0]!, prefix });
  queue.on('error', () => undefined);
  let arrived: (() => void) | undefined;
  let worker: Worker | undefined;
  const hops: number[] = [];
  try {
    worker = new Worker(name, async () => arrived?.(), { connection: conns[1]!, prefix, autorun: true, drainDelay: 5 });
    worker.on('error', () => undefined); // a Redis gone: the round's deadline deals with it
    // Guarded: these wait on the worker's blocking connection, which BullMQ opened (not the round's).
    await round.guard(worker.waitUntilReady());
    for (let i = 0; i < samples + 2; i++) {
      const got = new Promise<void>((r) => (arrived = r));
      const t = await timed(async () => {
        await queue.add('probe', { i }, { removeOnComplete: true, removeOnFail: true });
        await round.guard(got);
      });
      if (i >= 2) hops.push(t); // the first two warm the connections up
    }
  } finally {
    // With Redis gone BullMQ's close alone never ends (bullmq#4656); closeWorker stops waiting.
    await closeWorker(worker, conns[1]!);
    await queue.close().catch(() => undefined);
    await round.clean(redis, label);
    await Promise.all(conns.map((c) => round.release(c)));
  }

  // An empty call through the persistent Python worker (when this node has python3).
  round.check();
  let call = 0;
  const dir = await scratchDir('overhead');
  const py = new PythonWorker('overhead-probe', `${dir}/`);
  try {
    await py.start();
    const calls: number[] = [];
    for (let i = 0; i < samples + 1; i++) calls.push(await timed(() => py.invoke(undefined, dir, dir)));
    call = Math.min(...calls.slice(1));
  } catch {
    call = 0; // no Python here: JavaScript tasks run inside their runner
  } finally {
    await py.close().catch(() => undefined);
    await removeScratch(dir);
  }
  // A no-op task through the real runner, as CPU time (what tasks sharing cores queue behind).
  round.check();
  const task = call > 0 && opts.task !== false ? await measureTaskCost(redis, '', keys.prefix, node, 10, round) : undefined;
  // A 1 MiB hop between two tasks here, against an inline one (~16 task calls: not every round).
  round.check();
  const local = call > 0 && opts.localHop !== false ? await measureLocalHop(redis, keys.prefix, node, undefined, undefined, round) : undefined;
  round.check();
  return {
    node, hopSec: Math.min(...hops) + roundTrip, invokeSec: call + 2 * roundTrip,
    ...(task ? { taskCpuSec: task.cpuSec } : {}), ...(local ? { localHopSecPerByte: local.secPerByte, runnerCpuSecPerByte: local.cpuSecPerByte } : {}), samples, updatedAt: Date.now(),
  };
}

/** Fits of node -> home (SET) and home -> node (GET) on the home's Redis. */
export async function measureHomeLinks(redis: Redis, keys: Keys, node: string, sizes: [number, number], samples: number): Promise<LinkProfile[]> {
  const key = `${keys.prefix}probe:home:${node}`;
  const up: number[][] = [[], []];
  const down: number[][] = [[], []];
  const reps = Math.max(2, Math.ceil(samples / 2));
  try {
    for (let r = 0; r < reps; r++) {
      for (const [i, size] of sizes.entries()) {
        const blob = Buffer.alloc(size, r);
        up[i]!.push(await timed(() => redis.set(key, blob, 'EX', 60)));
        down[i]!.push(await timed(() => redis.getBuffer(key)));
      }
    }
  } finally {
    await redis.del(key).catch(() => undefined);
  }
  const now = Date.now();
  const link = (from: string, to: string, t: number[][]): LinkProfile => {
    const fit = fitTwo(sizes[0], median(t[0]!), sizes[1], median(t[1]!));
    return { from, to, a: 0, b: 0, c: 0, ...fit, samples: 2 * reps, updatedAt: now, model: 'linear', sampledAt: now, windowFrom: now };
  };
  return [link(node, HOME, up), link(HOME, node, down)];
}

const ROUNDS_KEPT = 5;
const EARLY_ROUNDS_MS = [200, 10_000, 30_000];
/** The task probe (a scratch app through a real runner, ~0.3 s of CPU) runs in the early rounds and
 * then every this many rounds: a machine's cost per task barely moves, and an agent on every node
 * of a busy host should not keep adding work to it. */
const TASK_PROBE_EVERY = 10;

/** The median round's figures (each figure on its own), stamped with the newest round's time. */
export function smooth(rounds: NodeOverhead[]): NodeOverhead {
  const last = rounds[rounds.length - 1]!;
  const task = rounds.flatMap((r) => (r.taskCpuSec === undefined ? [] : [r.taskCpuSec]));
  const local = rounds.flatMap((r) => (r.localHopSecPerByte === undefined ? [] : [r.localHopSecPerByte]));
  const perByte = rounds.flatMap((r) => (r.runnerCpuSecPerByte === undefined ? [] : [r.runnerCpuSecPerByte]));
  return {
    ...last, hopSec: median(rounds.map((r) => r.hopSec)), invokeSec: median(rounds.map((r) => r.invokeSec)),
    ...(task.length ? { taskCpuSec: median(task) } : {}), ...(local.length ? { localHopSecPerByte: median(local) } : {}),
    ...(perByte.length ? { runnerCpuSecPerByte: median(perByte) } : {}),
    samples: rounds.reduce((a, r) => a + r.samples, 0),
  };
}

function smoothLink(rounds: LinkProfile[]): LinkProfile {
  const last = rounds[rounds.length - 1]!;
  return { ...last, latencySec: median(rounds.map((r) => r.latencySec)), bandwidthBytesPerSec: median(rounds.map((r) => r.bandwidthBytesPerSec)), samples: rounds.reduce((a, r) => a + r.samples, 0), windowFrom: rounds[0]!.windowFrom };
}

export class OverheadProber {
  private timer?: NodeJS.Timeout;
  private readonly early: NodeJS.Timeout[] = [];
  private running?: Promise<void>;
  /** The round under way (stop abandons it). */
  private round?: ProbeRound;
  private stopped = false;
  /** What abandoned rounds made in Redis and could not remove (round.ts). */
  private readonly leftovers = new Map<string, KeyCleanup>();
  private readonly rounds: NodeOverhead[] = [];
  /** Task CPU, local hop and runner CPU per byte figures kept apart: most rounds do not measure them. */
  private readonly taskRounds: number[] = [];
  private readonly localRounds: number[] = [];
  private readonly perByteRounds: number[] = [];
  private roundNo = 0;
  private readonly linkRounds: LinkProfile[][] = [];
  last?: NodeOverhead;

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly node: string,
    private readonly opts: OverheadOptions,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    // What probes of agents killed mid-probe left behind (scratch-dir.ts).
    void sweepScratchDirs().catch(() => undefined);
    const tick = (): void => {
      if (!this.running) this.running = this.once().then(() => undefined).finally(() => (this.running = undefined));
    };
    for (const ms of EARLY_ROUNDS_MS) this.early.push(setTimeout(tick, ms).unref());
    this.timer = setInterval(tick, this.opts.everyMs);
    this.timer.unref();
  }

  /**
   * One measurement, published. Ends by the round deadline whatever Redis does: a round still
   * going then is abandoned (round.ts), and given UNWIND_MS to close what it opened.
   */
  async once(): Promise<NodeOverhead | undefined> {
    if (this.stopped) return undefined;
    const round = new ProbeRound(this.leftovers);
    this.round = round;
    const measuring = this.measure(round);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), this.opts.roundDeadlineMs)));
    const stopped = round.ended.then(() => 'stopped' as const);
    const out = await Promise.race([measuring, late, stopped]);
    clearTimeout(timer);
    if (out !== 'late' && out !== 'stopped') return out;
    if (out === 'late') {
      this.log(`overhead probe round abandoned after ${this.opts.roundDeadlineMs / 1000} s (Redis unreachable or a probe stuck); the next round runs as usual`);
    }
    round.abandon();
    await Promise.race([measuring, sleep(UNWIND_MS, undefined, { ref: false })]);
    return undefined;
  }

  private async measure(round: ProbeRound): Promise<NodeOverhead | undefined> {
    // Its own connection: a 256 KiB probe on the shared one would hold up heartbeats.
    const conn = round.connect(this.redis);
    try {
      await round.cleanLeftovers(conn);
      const n = this.roundNo++;
      const task = n < EARLY_ROUNDS_MS.length || n % TASK_PROBE_EVERY === 0;
      const figures = await measureOverhead(conn, this.keys, this.node, this.opts.samples, { round, task, localHop: n === EARLY_ROUNDS_MS.length - 1 || (n > 0 && n % TASK_PROBE_EVERY === 0) });
      const links = await measureHomeLinks(conn, this.keys, this.node, this.opts.homeProbeBytes, this.opts.samples);
      round.check();
      for (const [figure, kept] of [[figures.taskCpuSec, this.taskRounds], [figures.localHopSecPerByte, this.localRounds], [figures.runnerCpuSecPerByte, this.perByteRounds]] as const) {
        if (figure === undefined) continue;
        kept.push(figure);
        if (kept.length > ROUNDS_KEPT) kept.shift();
      }
      this.rounds.push(figures);
      this.linkRounds.push(links);
      if (this.rounds.length > ROUNDS_KEPT) this.rounds.shift();
      if (this.linkRounds.length > ROUNDS_KEPT) this.linkRounds.shift();
      const o = smooth(this.rounds);
      if (this.taskRounds.length) o.taskCpuSec = median(this.taskRounds);
      if (this.localRounds.length) o.localHopSecPerByte = median(this.localRounds);
      if (this.perByteRounds.length) o.runnerCpuSecPerByte = median(this.perByteRounds);
      const smoothed = [0, 1].map((i) => smoothLink(this.linkRounds.map((r) => r[i]!)));
      const pipe = conn.multi().set(this.keys.overhead(this.node), JSON.stringify(o));
      for (const l of smoothed) pipe.set(this.keys.linkFit(l.from, l.to), JSON.stringify(l));
      await pipe.exec();
      this.last = o;
      return o;
    } catch (e) {
      // An abandoned round's failures are its connections dropped: once() said so already.
      if (!round.abandoned) this.log(`overhead probe failed: ${(e as Error).message}`);
      return undefined;
    } finally {
      await round.release(conn);
    }
  }

  /** Ends the round under way at once, then removes what rounds left in Redis if it answers. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const t of this.early) clearTimeout(t);
    this.round?.abandon();
    await this.running?.catch(() => undefined);
    if (this.leftovers.size === 0 || this.redis.status !== 'ready') return;
    const round = new ProbeRound(this.leftovers);
    const conn = round.connect(this.redis);
    await Promise.race([round.cleanLeftovers(conn), sleep(LEFTOVERS_MS, undefined, { ref: false })]);
    round.abandon();
  }
}
