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
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Keys } from '../../config/redis-keys.js';
import { HOME, type LinkProfile, type NodeOverhead } from '../../config/types.js';
import { Queue, Worker, type Redis } from '../../circe/queue/libs.js';
import { PythonWorker } from '../../circe/invoke/python.js';
import { measureTaskCost } from './task-probe.js';
import { measureLocalHop } from './local-hop-probe.js';
import { median } from './median.js';

export interface OverheadOptions {
  /** ms between measurements (the first runs at start). */
  everyMs: number;
  /** Probes per figure (medians). */
  samples: number;
  /** Blob sizes of the home-link probes, bytes (two: the fit needs a slope). */
  homeProbeBytes: [number, number];
}

export const defaultOverheadOptions = (): OverheadOptions => ({ everyMs: 60_000, samples: 7, homeProbeBytes: [16 * 1024, 256 * 1024] });

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

/** One measurement of this node's hop and invocation costs. */
export async function measureOverhead(redis: Redis, keys: Keys, node: string, samples: number, opts: { task?: boolean; localHop?: boolean } = {}): Promise<NodeOverhead> {
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
  const conns = [redis.duplicate({ maxRetriesPerRequest: null }), redis.duplicate({ maxRetriesPerRequest: null })];
  for (const c of conns) c.on('error', () => undefined);
  const queue = new Queue(name, { connection: conns[0]!, prefix });
  let arrived: (() => void) | undefined;
  let worker: Worker | undefined;
  const hops: number[] = [];
  try {
    worker = new Worker(name, async () => arrived?.(), { connection: conns[1]!, prefix, autorun: true, drainDelay: 5 });
    await worker.waitUntilReady();
    for (let i = 0; i < samples + 2; i++) {
      const got = new Promise<void>((r) => (arrived = r));
      const t = await timed(async () => {
        await queue.add('probe', { i }, { removeOnComplete: true, removeOnFail: true });
        await got;
      });
      if (i >= 2) hops.push(t); // the first two warm the connections up
    }
  } finally {
    await worker?.close().catch(() => undefined);
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close().catch(() => undefined);
    for (const c of conns) c.disconnect();
  }

  // An empty call through the persistent Python worker (when this node has python3).
  let call = 0;
  const dir = await mkdtemp(join(tmpdir(), 'jupiter-overhead-'));
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
    await rm(dir, { recursive: true, force: true });
  }
  // A no-op task through the real runner, as CPU time (what tasks sharing cores queue behind).
  const task = call > 0 && opts.task !== false ? await measureTaskCost(redis, '', keys.prefix, node, 10) : undefined;
  // A 1 MiB hop between two tasks here, against an inline one (~16 task calls: not every round).
  const local = call > 0 && opts.localHop !== false ? await measureLocalHop(redis, keys.prefix, node) : undefined;
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
  private conn?: Redis;
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
    // Its own connection: a 256 KiB probe on the shared one would hold up heartbeats.
    this.conn = this.redis.duplicate();
    this.conn.on('error', () => undefined);
    const tick = (): void => {
      if (!this.running) this.running = this.once().then(() => undefined).finally(() => (this.running = undefined));
    };
    for (const ms of EARLY_ROUNDS_MS) this.early.push(setTimeout(tick, ms).unref());
    this.timer = setInterval(tick, this.opts.everyMs);
    this.timer.unref();
  }

  /** One measurement, published. */
  async once(): Promise<NodeOverhead | undefined> {
    const conn = this.conn ?? this.redis;
    try {
      const n = this.roundNo++;
      const task = n < EARLY_ROUNDS_MS.length || n % TASK_PROBE_EVERY === 0;
      const round = await measureOverhead(conn, this.keys, this.node, this.opts.samples, { task, localHop: n === EARLY_ROUNDS_MS.length - 1 || (n > 0 && n % TASK_PROBE_EVERY === 0) });
      for (const [figure, kept] of [[round.taskCpuSec, this.taskRounds], [round.localHopSecPerByte, this.localRounds], [round.runnerCpuSecPerByte, this.perByteRounds]] as const) {
        if (figure === undefined) continue;
        kept.push(figure);
        if (kept.length > ROUNDS_KEPT) kept.shift();
      }
      this.rounds.push(round);
      this.linkRounds.push(await measureHomeLinks(conn, this.keys, this.node, this.opts.homeProbeBytes, this.opts.samples));
      if (this.rounds.length > ROUNDS_KEPT) this.rounds.shift();
      if (this.linkRounds.length > ROUNDS_KEPT) this.linkRounds.shift();
      const o = smooth(this.rounds);
      if (this.taskRounds.length) o.taskCpuSec = median(this.taskRounds);
      if (this.localRounds.length) o.localHopSecPerByte = median(this.localRounds);
      if (this.perByteRounds.length) o.runnerCpuSecPerByte = median(this.perByteRounds);
      const links = [0, 1].map((i) => smoothLink(this.linkRounds.map((r) => r[i]!)));
      const pipe = this.redis.multi().set(this.keys.overhead(this.node), JSON.stringify(o));
      for (const l of links) pipe.set(this.keys.linkFit(l.from, l.to), JSON.stringify(l));
      await pipe.exec();
      this.last = o;
      return o;
    } catch (e) {
      this.log(`overhead probe failed: ${(e as Error).message}`);
      return undefined;
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    for (const t of this.early) clearTimeout(t);
    await this.running?.catch(() => undefined);
    this.conn?.disconnect();
  }
}
