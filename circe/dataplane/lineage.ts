// Lineage on the direct data path: an output kept on its producing node is lost with that node.
// Rather than lose the item, the invocation that made it is run again from its inputs, which
// are kept (in Redis or on their own producers' nodes) for as long as the output is wanted.
//
//   record   when a task has run for an item and kept outputs in its node's store, each such
//            output's blob gets a lineage record `<blob key>:l` (the task, the item, the node,
//            the invocation's inputs, its stored outputs), and every input blob gets a holder
//            `L<output blob>`: the input's bytes stay while the output is wanted. The release in
//            scripts.ts frees those holders when the output's last receiver took it (recursively
//            so, for inputs that were stored outputs themselves).
//   ask      a receiver that cannot get a blob because its node is dead (its agent's heartbeat
//            key expired: the heal reconciler then moves the node's tasks) or because the node
//            answers that it does not hold the blob, asks for a re-run: a request on the
//            producing task's re-run list (deduplicated for RERUN_ASK_MS, then asked again, so a
//            re-runner that dies mid-way costs only a delay).
//   re-run   the producing task's runner (wherever it runs now) takes the request, fetches the
//            invocation's inputs (which may ask for re-runs further up: recursive), runs the task
//            again, keeps the outputs in its own store and points the blob records at its node.
//            Nothing is sent: the deliveries that reference the blobs are still in flight, their
//            receivers keep waiting for the bytes and find them at the new node. So the done
//            markers, delivery ids and the sink's delivered set are untouched and every output
//            still reaches the sink exactly once.
// Assumes what lineage always assumes (Spark, Dask): a task run again on the same inputs gives
// outputs that can stand in for the lost ones.
import type { ChainableCommander, Redis } from 'ioredis';
import type { StoredInput } from '../queue/failures.js';
import type { AppKeys } from '../queue/keys.js';
import { pipeline } from '../queue/pipeline.js';

/** A request for a re-run is not repeated within this long (the re-runner may be starting). */
export const RERUN_ASK_MS = 15_000;
/** How often a runner looks for re-run requests of its task; and while it has found some lately. */
const POLL_MS = 1000;
const POLL_BUSY_MS = 100;
/** How long after the last request found the runner looks at POLL_BUSY_MS (a loss comes in waves: re-runs ask further up). */
const BUSY_FOR_MS = 5000;
/** Re-runs one runner has under way at once (each holds its inputs' bytes while it waits for a slot). */
const MAX_ACTIVE = 4;

export interface LineageRecord {
  /** Producing task, item, and the node that keeps the outputs. */
  task: string;
  item: string;
  node: string;
  /** The input blob ids (read by the release script, scripts.ts). */
  in: string[];
  /** The invocation's inputs (what a re-run fetches). */
  inputs: StoredInput[];
  /** Blob ids of the invocation's outputs kept in the store. */
  outs: string[];
}

export const lineageKey = (keys: AppKeys, blob: string): string => `${keys.blob(blob)}:l`;
const askedKey = (keys: AppKeys, blob: string): string => `${keys.blob(blob)}:r`;
export const rerunList = (keys: AppKeys, task: string): string => `${keys.base}rerun:${task}`;

// Records lineage unless the task is already done for the item (a copy whose commit will be
// refused: its outputs are never stored, and holders for them would keep the inputs forever).
// KEYS: 1 the task's done marker for the item, then per output its lineage key, then per input
//   its blob key and holders key
// ARGV: 1 record JSON, 2 number of outputs, then the output blob ids
const RECORD = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local n = tonumber(ARGV[2])
for o = 1, n do redis.call('SET', KEYS[1 + o], ARGV[1]) end
for i = 2 + n, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    for o = 1, n do redis.call('SADD', KEYS[i + 1], 'L' .. ARGV[2 + o]) end
  end
end
return 1
`;

// A re-run kept its outputs on `node`: point every blob that is still wanted there.
// KEYS: per output its blob key and lineage key. ARGV: 1 pointer, 2 node
const REPOINT = `
local moved = 0
for i = 1, #KEYS, 2 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('SET', KEYS[i], ARGV[1])
    local rec = redis.call('GET', KEYS[i + 1])
    if rec then
      local r = cjson.decode(rec)
      r['node'] = ARGV[2]
      redis.call('SET', KEYS[i + 1], cjson.encode(r))
    end
    moved = moved + 1
  end
end
return moved
`;

interface LineageRedis extends Redis {
  jLineage(...call: LineageCall): Promise<number>;
  jRepoint(numKeys: number, ...keysAndArgs: string[]): Promise<number>;
}

function scripted(redis: Redis): LineageRedis {
  const r = redis as LineageRedis;
  if (typeof (r as Partial<LineageRedis>).jLineage !== 'function') {
    redis.defineCommand('jLineage', { lua: RECORD });
    redis.defineCommand('jRepoint', { lua: REPOINT });
  }
  return r;
}

/** The RECORD call for one invocation: number of keys, then keys and arguments. */
export type LineageCall = [number, ...string[]];

/** The call that remembers how the stored outputs `outs` of one invocation were made. */
export function lineageCall(keys: AppKeys, rec: Omit<LineageRecord, 'in'>): LineageCall | undefined {
  if (rec.outs.length === 0) return undefined;
  const inputs = rec.inputs.map(({ id, name, blob, from, at, size, src }) => ({ id, name, blob, from, at, size, ...(src ? { src } : {}) }));
  const full: LineageRecord = { ...rec, in: inputs.map((i) => i.blob), inputs };
  const k = [keys.done(rec.task, rec.item), ...rec.outs.map((o) => lineageKey(keys, o)), ...inputs.flatMap((i) => [keys.blob(i.blob), keys.blobHolders(i.blob)])];
  return [k.length, ...k, JSON.stringify(full), String(rec.outs.length), ...rec.outs];
}

/**
 * Queue lineage records on a pipeline of `redis` (made after defineLineage(redis)): the task
 * runner sends them in its commit's pipeline, ahead of the commit script, so Redis records them
 * before the commit as a separate call would, without a round trip of their own.
 */
export function queueLineage(pipe: ChainableCommander, calls: LineageCall[]): void {
  for (const c of calls) (pipe as ChainableCommander & { jLineage(...a: LineageCall): unknown }).jLineage(...c);
}

/** Define the lineage scripts on a connection (before its pipelines are made). */
export function defineLineage(redis: Redis): void {
  scripted(redis);
}

/** Point the blob records of a re-run's outputs at `node`; returns how many were still wanted. */
export async function repoint(redis: Redis, keys: AppKeys, outs: string[], node: string): Promise<number> {
  if (outs.length === 0) return 0;
  const k = outs.flatMap((o) => [keys.blob(o), lineageKey(keys, o)]);
  return scripted(redis).jRepoint(k.length, ...k, `@${node}`, node);
}

/** A node is dead when its agent registered once and its heartbeat key has expired. */
export async function nodeDead(redis: Redis, keys: AppKeys, node: string): Promise<boolean> {
  const res = (await pipeline(redis).sismember(keys.agents, node).exists(keys.agent(node)).exec()) ?? [];
  const [known, alive] = res.map(([err, v]) => (err ? undefined : Number(v)));
  return known === 1 && alive === 0;
}

/**
 * Ask the producer of `blob` to run again. Returns false when the blob has no lineage (nothing
 * to re-run from), true when a request is out (now or within the last RERUN_ASK_MS).
 */
export async function askRerun(redis: Redis, keys: AppKeys, blob: string, why: string): Promise<boolean> {
  const raw = await redis.get(lineageKey(keys, blob));
  if (!raw) return false;
  const rec = JSON.parse(raw) as LineageRecord;
  if ((await redis.set(askedKey(keys, blob), why, 'PX', RERUN_ASK_MS, 'NX')) === 'OK') {
    await redis.rpush(rerunList(keys, rec.task), JSON.stringify({ blob, why, at: Date.now(), node: rec.node }));
  }
  return true;
}

/** The node a blob's record points at now (direct path), or undefined (no record, or bytes). */
export async function pointedNode(redis: Redis, keys: AppKeys, blob: string): Promise<string | undefined> {
  const v = await redis.getrange(keys.blob(blob), 0, 255);
  return v.startsWith('@') ? v.slice(1) : undefined;
}

export interface RerunHost {
  redis: Redis;
  keys: AppKeys;
  task: string;
  node: string;
  log(msg: string): void;
  /**
   * Fetch the inputs, run the task on them and keep its outputs in this node's store; returns
   * the blob ids it stored.
   */
  run(rec: LineageRecord): Promise<string[]>;
}

/**
 * Takes the re-run requests of one task (one runner of it at a time takes each). A request whose
 * blob is gone (its receivers were served meanwhile) or was made again since it was asked for (its
 * record names another node now) is dropped; any other is re-run, even one for a blob that a live
 * producer still holds, which costs one invocation, never a duplicate at the sink.
 */
export class Reruns {
  private timer?: NodeJS.Timeout;
  private busy?: Promise<void>;
  private stopped = false;
  private active = 0;
  private again = false;
  /** When this runner last took a request. */
  private tookAt = 0;
  readonly stats = { rerun: 0, repointed: 0, failed: 0 };

  constructor(private readonly host: RerunHost) {}

  start(): this {
    const tick = (): void => {
      if (this.stopped) return;
      void this.kick().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, Date.now() - this.tookAt < BUSY_FOR_MS ? POLL_BUSY_MS : POLL_MS);
      });
    };
    this.timer = setTimeout(tick, POLL_MS);
    return this;
  }

  /**
   * Take requests now: on each poll, and as each re-run ends. A kick while taking has the taking
   * go round once more (it may have looked at `active` before that re-run ended).
   */
  private kick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.busy) {
      this.again = true;
      return this.busy;
    }
    this.again = false;
    this.busy = this.drain().catch((e: Error) => this.host.log(`re-run: ${e.message}`)).finally(() => {
      this.busy = undefined;
      if (this.again) void this.kick();
    });
    return this.busy;
  }

  private async drain(): Promise<void> {
    const { redis, keys, task } = this.host;
    for (;;) {
      if (this.stopped || this.active >= MAX_ACTIVE) return;
      const raw = await redis.lpop(rerunList(keys, task));
      if (!raw) return;
      this.tookAt = Date.now();
      const { blob, why, node } = JSON.parse(raw) as { blob: string; why: string; node?: string };
      const rec = await redis.get(lineageKey(keys, blob));
      if (!rec || !(await redis.exists(keys.blob(blob)))) continue; // taken meanwhile
      const lin = JSON.parse(rec) as LineageRecord;
      // Made again since it was asked for (asked twice: ahead and by the fetch that got to it
      // after RERUN_ASK_MS; the record now names the node of that re-run).
      if (node !== undefined && lin.node !== node) continue;
      // Re-runs go on in the background beside the task's deliveries (the slots serve both);
      // a list of many (a node lost with a backlog: askAhead in plane.ts) drains as they end,
      // not MAX_ACTIVE per poll.
      this.active++;
      void this.one(lin, why).finally(() => {
        this.active--;
        void this.kick();
      });
    }
  }

  private async one(lin: LineageRecord, why: string): Promise<void> {
    const { redis, keys, node, log } = this.host;
    log(`re-running ${lin.task} for item ${lin.item} (outputs were on ${lin.node}: ${why})`);
    try {
      const stored = await this.host.run(lin);
      const mine = lin.outs.filter((o) => stored.includes(o));
      const n = await repoint(redis, keys, mine, node);
      this.stats.rerun++;
      this.stats.repointed += n;
      log(`re-ran ${lin.task} for item ${lin.item}: ${n} output(s) now kept on ${node}`);
    } catch (e) {
      // The receiver asks again after RERUN_ASK_MS.
      this.stats.failed++;
      log(`re-run of ${lin.task} for item ${lin.item} failed: ${(e as Error).message}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.busy;
  }
}

/** A re-run's inputs: bytes kept in Redis come with them; those kept on a node are fetched by the caller (src). */
export async function lineageInputs(redis: Redis, keys: AppKeys, rec: LineageRecord): Promise<Array<{ inp: StoredInput; bytes: Buffer }>> {
  return Promise.all(rec.inputs.map(async (inp) => {
    if (inp.src) return { inp, bytes: Buffer.alloc(0) };
    const bytes = await redis.getBuffer(keys.blob(inp.blob));
    if (!bytes) throw new Error(`input ${inp.name} of item ${rec.item} for a re-run of ${rec.task} is gone from Redis`);
    return { inp, bytes };
  }));
}
