// The direct data path of one runner process (or the home's sink): outputs larger than what
// travels inline stay on the producing node (store.ts) and are served there (server.ts); a
// receiver fetches them from that node, over the link between the two nodes (client.ts). Redis
// keeps everything else: queues of deliveries, the blob's record (a pointer naming the node),
// holders, done markers. So every guarantee of the central path holds unchanged; only where the
// bytes live differs. See circe/README.md "Data path".
import type { ChainableCommander, Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { getuid } from 'node:process';
import { LINK_TRANSFER_MIN_BYTES, LINK_TRANSFERS_KEPT, type LinkTransfer } from '../../config/link-transfers.js';
import { bullKey, type AppKeys } from '../queue/keys.js';
import type { BundleJob } from '../queue/naming.js';
import type { PipelineSettings } from '../queue/settings.js';
import { BlobMissingError, getBlob } from './client.js';
import { askRerun, nodeDead, pointedNode, RERUN_ASK_MS } from './lineage.js';
import { machineId } from '../runtime/machine.js';
import { DataServer } from './server.js';
import { checkBlobId, NodeStore, type PutOptions } from './store.js';
import { pipeline } from '../queue/pipeline.js';

/** Files younger than this are never swept: their commit may still be on its way to Redis. */
export const SWEEP_GRACE_MS = 60_000;
const SWEEP_EVERY_MS = 10_000;
/** While a put waits for room, sweeps come this often at most (each a folder scan and one round trip). */
const FULL_SWEEP_MS = 200;
/**
 * A plane closing while its app's tasks move live (A moving) keeps serving what it stored until
 * receivers took it, this long at most: within the runner's stop grace (supervisor, docker stop).
 */
export const DRAIN_MS = 10_000;
/** A transfer's record waits this long at most for a Redis call to ride along with (batchNotes). */
const NOTES_MS = 1000;
/** One fetch attempt gives up after this long without an answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/**
 * A node found dead is taken for dead this long before its heartbeat is looked at again: fetches
 * meanwhile ask no attempt of it (a machine that is gone answers nothing: each attempt would wait
 * out ATTEMPT_TIMEOUT_MS) but look where the blob is kept now.
 */
const DEAD_TRUST_MS = 3000;
/**
 * An attempt that received nothing for this long has its node's heartbeat looked at (and again
 * after each such stretch): a node found dead ends the attempt (a machine that went silent would
 * otherwise cost the whole ATTEMPT_TIMEOUT_MS before anyone looks). Bytes still coming in are
 * taken, even from a node whose heartbeat expired (cut off from Redis, not from us).
 */
const ALIVE_CHECK_MS = 1000;
/**
 * A node whose heartbeat is live but where nothing serves a blob — every endpoint it registered
 * refuses connections or lacks the blob, or none is left (its runners were killed, or stopped
 * past the drain) — is given this long to come back (a runner restarting registers a new
 * endpoint within a few seconds); then the blob's producer is asked to run again (lineage),
 * instead of the receiver waiting out its fetch patience (120 s) on a store nobody serves.
 * Connections that time out are a different matter (a partition: the bytes are kept there and
 * come once the link is back), and never start this clock.
 */
export const UNSERVED_MS = 10_000;
/** A node seen serving nothing counts as still so when seen again within this long (retries come every 2 s at most). */
const UNSERVED_SEEN_MS = 5000;
/** Waiting jobs looked at when a source is found dead (askAhead), and how many per Redis call (bounded memory: a job may carry 64 inline files). */
const ASK_AHEAD_MAX = 1000;
const ASK_AHEAD_CHUNK = 100;

/** The deployment's data token: made once per deployment (SET NX), read by every runner. */
export async function ensureDataToken(redis: Redis, keys: AppKeys): Promise<string> {
  await redis.set(keys.dataToken, randomBytes(24).toString('hex'), 'NX');
  return (await redis.get(keys.dataToken))!;
}

/** Where a node's store lives on a machine without a data volume (process runtime). */
export function defaultDataRoot(workRoot: string, prefix: string, app: string): string {
  const safe = `${prefix}${app}`.replace(/[^A-Za-z0-9_.-]/g, '_');
  return join(workRoot, `jupiter-data-${getuid?.() ?? 0}`, safe);
}

/**
 * How a producer's store is found without the network (keys.dataDirs): a receiver on the same
 * kernel that sees the very same folder (device and inode, not just the path: containers may
 * mount different folders at one path) copies a blob's file itself instead of fetching it.
 */
interface StoreSite {
  machine: string;
  dir: string;
  dev: number;
  ino: number;
}

/** A site that refers to a folder this process sees: its path, else undefined. */
function reachableDir(site: StoreSite): string | undefined {
  if (site.machine !== machineId()) return undefined;
  try {
    const st = statSync(site.dir);
    return st.dev === site.dev && st.ino === site.ino ? site.dir : undefined;
  } catch {
    return undefined;
  }
}

/** How long a lookup of another node's store site is trusted (a task that moves gets a new one). */
const SITE_TTL_MS = 10_000;

/** An input as a receiver takes it: bytes, or the file of a store on this machine to copy. */
export type Taken = { bytes: Buffer; file?: undefined } | { file: string; size: number; bytes?: undefined };

/** The pointer the blob's record holds on the direct path (the bytes are on `node`). */
export function pointerFor(node: string): Buffer {
  return Buffer.from(`@${node}`);
}

export interface DataPlaneOptions {
  redis: Redis;
  keys: AppKeys;
  settings: PipelineSettings;
  node: string;
  /** The folder of this node's store (shared by the deployment's runners on the node). */
  dir?: string;
  /** Address other nodes reach this one at (default: this side of the Redis connection). */
  advertise?: string;
  /**
   * The owner sends the transfers' records along with its own Redis calls (flushNotes): a task
   * runner's commit follows each fetch. Otherwise (the sink) each is written on its own.
   */
  batchNotes?: boolean;
  log(msg: string): void;
}

/** What a fetch is for. */
export interface FetchFor {
  /** The asking runner's queue: deliveries waiting there come from the same nodes (askAhead). */
  queue?: string;
  /**
   * The source may well be dead (a lineage re-run fetching the inputs of an invocation whose
   * outputs were lost): its heartbeat is looked at before the first attempt, which would wait
   * out ATTEMPT_TIMEOUT_MS on a machine that is gone.
   */
  suspect?: boolean;
}

/** A transfer's place in a source node's lane (DataPlane.place). */
interface LanePlace {
  readonly src: string;
  use<T>(fn: (release: () => void) => Promise<T>): Promise<T>;
  skip(): void;
}

/**
 * Producer planes of this process by store folder. The runners of one node host (process
 * runtime) share a Redis connection and a store folder: they share one plane too, so a node
 * pays for one endpoint, one sweeper and one transfer lane per source node, not one per task.
 */
const producers = new Map<string, { plane: Promise<DataPlane>; refs: number; redis: Redis }>();

export class DataPlane {
  private store?: NodeStore;
  private server?: DataServer;
  private endpoint?: string;
  private sweeper?: NodeJS.Timeout;
  /** The sweep under way (one at a time), and when the last one began. */
  private sweeping?: Promise<void>;
  private sweptAt = 0;
  private readonly endpoints = new Map<string, { list: string[]; at: number }>();
  /** Other nodes' store folders this process can read, by node (undefined: none here). */
  private readonly sites = new Map<string, { dir?: string; at: number }>();
  /** The last transfer queued per source node: transfers from one node go one after another. */
  private readonly lanes = new Map<string, Promise<unknown>>();
  /** Nodes found dead, with when (DEAD_TRUST_MS); and when each (node, queue) was asked ahead for. */
  private readonly dead = new Map<string, number>();
  private readonly askedAhead = new Map<string, number>();
  /**
   * Live nodes on which nothing serves at all (every endpoint refused, or none left): since when
   * (UNSERVED_MS), and when that was last seen (an old sighting says nothing about now).
   */
  private readonly unserved = new Map<string, { since: number; seen: number }>();
  readonly stats = { fetched: 0, fetchedBytes: 0, local: 0, stored: 0, storedBytes: 0, retries: 0, reruns: 0 };

  /** Transfer records not yet written (batchNotes), and the timer that writes them if nobody does. */
  private notes: Array<[string, string]> = [];
  private notesTimer?: NodeJS.Timeout;

  /** The key of this plane in `producers` while it is shared there. */
  private sharedAs?: string;

  private constructor(private readonly opts: DataPlaneOptions, private readonly token: string) {}

  /** A plane that only fetches (the sink): no store, no endpoint. */
  static async reader(opts: DataPlaneOptions): Promise<DataPlane> {
    return new DataPlane(opts, await ensureDataToken(opts.redis, opts.keys));
  }

  /** A plane that stores this node's outputs and serves them to the other nodes. */
  static async producer(opts: DataPlaneOptions & { dir: string }): Promise<DataPlane> {
    const key = resolve(opts.dir);
    const hit = producers.get(key);
    if (hit && hit.redis === opts.redis) {
      hit.refs++;
      return hit.plane;
    }
    const made = (async () => {
      const plane = new DataPlane(opts, await ensureDataToken(opts.redis, opts.keys));
      await plane.open(opts.dir);
      return plane;
    })();
    if (hit) return made; // another connection (in-process tests): a plane of its own
    producers.set(key, { plane: made, refs: 1, redis: opts.redis });
    try {
      const plane = await made;
      plane.sharedAs = key;
      return plane;
    } catch (e) {
      producers.delete(key);
      throw e;
    }
  }

  private async open(dir: string): Promise<void> {
    const { redis, keys, node, settings } = this.opts;
    this.store = new NodeStore(dir, {
      maxBytes: settings.storeBytes,
      waitMs: settings.fetchPatienceMs,
      onFull: () => {
        if (!this.sweeping && Date.now() - this.sweptAt >= FULL_SWEEP_MS) void this.sweep();
      },
    });
    this.server = new DataServer({ store: this.store, token: this.token });
    const port = await this.server.start();
    const host = this.opts.advertise ?? localAddress(redis) ?? '127.0.0.1';
    this.endpoint = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const st = statSync(this.store.dir);
    const site: StoreSite = { machine: machineId(), dir: resolve(this.store.dir), dev: st.dev, ino: st.ino };
    await pipeline(redis)
      .hset(keys.dataDirs(node), this.endpoint, JSON.stringify(site))
      .hset(keys.dataNodes(node), this.endpoint, String(Date.now()))
      .exec();
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  /** This node's endpoint (host:port), when it serves. */
  get address(): string | undefined {
    return this.endpoint;
  }

  /** Keep an output on this node; returns the pointer its blob record holds instead of the bytes. */
  async put(blob: string, bytes: Buffer): Promise<Buffer> {
    await this.store!.put(blob, bytes);
    this.stats.stored++;
    this.stats.storedBytes += bytes.length;
    return pointerFor(this.opts.node);
  }

  /** put() for an output still in its file (`size` bytes): its bytes never enter this process. */
  async putFile(blob: string, path: string, size: number, opts: PutOptions = {}): Promise<Buffer> {
    await this.store!.putFile(blob, path, size, opts);
    this.stats.stored++;
    this.stats.storedBytes += size;
    return pointerFor(this.opts.node);
  }

  /**
   * The bytes of a blob held on node `src`: from this node's store, or fetched from `src`. A node
   * that is dead (lineage.ts nodeDead) or answers that it lacks the blob has the blob's producer
   * asked to run again (lineage); the re-run points the blob's record at its own node, where the
   * next round finds it.
   */
  fetch(src: string, blob: string, why: FetchFor = {}): Promise<Buffer> {
    return this.fetchIn(this.place(src), src, blob, true, why);
  }

  /**
   * fetch() in `place` (taken in src's lane when the caller asked, before any await: the lookups
   * before a transfer take different times, and fetches asked together went out of order under
   * load). `lookNear`: whether to look for a readable store first (take() has).
   */
  private async fetchIn(place: LanePlace, src: string, blob: string, lookNear: boolean, why: FetchFor): Promise<Buffer> {
    try {
      return await this.fetchLoop(place, src, blob, lookNear, why);
    } finally {
      place.skip(); // unless used: the fetch ended before its transfer (a near file, an error)
    }
  }

  private async fetchLoop(first: LanePlace, src: string, blob: string, lookNear: boolean, why: FetchFor): Promise<Buffer> {
    const { settings, redis, keys } = this.opts;
    // The patience counts from the asking, so fetches queued behind one that waits out an
    // unreachable node do not each wait the whole patience again.
    const deadline = Date.now() + settings.fetchPatienceMs;
    let backoff = 100;
    let last: Error | undefined;
    let asked = false;
    /** Since when nothing on src serves the blob (UNSERVED_MS), or undefined. */
    let unservedSince: number | undefined;
    if (why.suspect && !this.dead.has(src) && (await this.heartbeatGone(src))) this.foundDead(src, why.queue);
    for (let round = 0; ; round++) {
      const near = round > 0 || lookNear ? await this.nearFile(src, blob) : undefined;
      if (near) {
        try {
          const bytes = readFileSync(near);
          this.stats.local++;
          return bytes;
        } catch {
          // gone meanwhile (swept after a re-run moved it): ask over the network
        }
      }
      const gone = await this.stillDead(src);
      const list = gone ? [] : await this.endpointsOf(src, round > 0);
      let missing = 0;
      let refused = 0;
      // Transfers from one source node go in the order asked, each mostly alone on the link: a
      // runner that fetches ahead gets its next item's bytes at the link's full rate right after
      // the current one's, instead of splitting the link between them and delaying both. The
      // next one starts in the current one's last OVERLAP_MS (client.ts), so its request, the
      // sender's turn (its event loop may be busy running a task) and its first bytes overlap
      // the current one's tail and the link does not idle between items. Only the attempts hold the lane;
      // backoff and waiting for a re-run do not (a re-run may need this very lane).
      const from = src;
      // The first attempt in the place taken when asked (unless the blob moved meanwhile); retries queue anew.
      const place = round === 0 && from === first.src ? first : this.place(from);
      const got = await place.use(async (release) => {
        for (const ep of list) {
          // Found dead while this waited its turn in the lane (the fetch before it timed out).
          if (this.knownDead(from)) break;
          try {
            // Timed inside the lane: the wait for earlier transfers is not the link's time (the
            // previous one's last OVERLAP_MS may still share the link: noise of a few ms).
            const t0 = performance.now();
            const stop = new AbortController();
            let came = false;
            const watch = setInterval(() => {
              if (!came) void this.abortIfDead(from, why, stop);
              came = false;
            }, ALIVE_CHECK_MS);
            try {
              const bytes = await getBlob(ep, blob, { token: this.token, maxBytes: settings.maxBlobBytes, timeoutMs: ATTEMPT_TIMEOUT_MS, onTail: release, signal: stop.signal, onData: () => (came = true) });
              this.noteTransfer(from, bytes.length, (performance.now() - t0) / 1000);
              return bytes;
            } finally {
              clearInterval(watch);
            }
          } catch (e) {
            last = e as Error;
            if (e instanceof BlobMissingError) missing++;
            else if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED') refused++;
          }
        }
        // No endpoint answered: whether the node is dead is looked up before the lane goes on to
        // the next fetch from it, which would otherwise wait out the same silence first.
        if (list.length > 0 && missing < list.length && !this.knownDead(from) && (await this.heartbeatGone(from))) {
          this.foundDead(from, why.queue);
        }
        return undefined;
      });
      if (got) {
        this.stats.fetched++;
        this.stats.fetchedBytes += got.length;
        return got;
      }
      // Every runner of the node answered and none holds it: waiting alone will not bring it back.
      const allMissing = list.length > 0 && missing === list.length;
      const knownDead = this.knownDead(src);
      // Nothing on src serves this blob now (some endpoints refused, the others lack it), or
      // nothing on src serves at all (all refused, or no endpoint): the latter is the node's
      // state, which the next fetches from it need not find out again, each for UNSERVED_MS.
      const live = !gone && !knownDead;
      const idle = live && (list.length === 0 || refused === list.length);
      const now = Date.now();
      const nodeSince = idle ? await this.seeUnserved(src, now) : Infinity;
      if (live && !idle) this.unserved.delete(src);
      unservedSince = live && refused > 0 && missing + refused === list.length ? (unservedSince ?? now) : undefined;
      const since = Math.min(unservedSince ?? Infinity, nodeSince);
      const abandoned = now - since >= UNSERVED_MS;
      if (abandoned && idle) this.askAheadOnce(src, why.queue, `nothing on node ${src} serves`);
      if (allMissing || round > 0 || knownDead) {
        // A re-run may have moved the blob to another node meanwhile.
        const at = await pointedNode(redis, keys, blob).catch(() => undefined);
        if (at && at !== src) {
          if (!knownDead) this.opts.log(`blob ${blob.slice(0, 8)} is now kept on ${at} (was ${src})`);
          src = at;
          backoff = 100;
          unservedSince = undefined;
          continue;
        }
        const dead = knownDead || (!allMissing && (await this.heartbeatGone(src)));
        if (dead) this.foundDead(src, why.queue);
        if (allMissing || dead || abandoned) {
          const reason = allMissing ? `node ${src} does not hold it` : dead ? `node ${src} is dead` : `nothing on node ${src} has served it for ${UNSERVED_MS / 1000} s`;
          const lineage = await askRerun(redis, keys, blob, reason).catch(() => true);
          if (!lineage && allMissing) throw last!;
          if (lineage && !asked) {
            asked = true;
            this.stats.reruns++;
            this.opts.log(`blob ${blob.slice(0, 8)}: ${reason}; asked its producer to run again (lineage)`);
          }
        }
      }
      if (Date.now() + backoff > deadline) {
        throw new Error(`could not fetch blob ${blob} from node ${src} within ${settings.fetchPatienceMs} ms: ${last?.message ?? 'no data endpoint registered for that node'}`);
      }
      if (round === 0 && !allMissing && !knownDead) this.opts.log(`node ${src} unreachable for blob ${blob.slice(0, 8)} (${last?.message ?? 'no endpoint'}); retrying for up to ${settings.fetchPatienceMs / 1000} s`);
      this.stats.retries++;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(2000, backoff * 2);
    }
  }

  /**
   * A blob as the receiver should take it: when a store this process can read holds it (this
   * node's, or another node's on this machine), its file, for the caller to copy in the kernel
   * (no socket, no buffers in either process); else its bytes, fetched (fetch()). A file taken
   * may be gone by the time it is copied (a lineage re-run moved the blob): the caller then
   * fetches.
   */
  async take(src: string, blob: string, why: FetchFor = {}): Promise<Taken> {
    // In src's lane from now, as fetch(): takes asked in order transfer in that order.
    const place = this.place(src);
    try {
      const file = await this.nearFile(src, blob);
      if (file) {
        try {
          const size = statSync(file).size;
          this.stats.local++;
          return { file, size };
        } catch {
          // no longer there (a re-run moved it): fetched, without looking again
        }
      }
      return { bytes: await this.fetchIn(place, src, blob, false, why) };
    } finally {
      place.skip();
    }
  }

  /** During a long attempt on `node`: end it if the node is dead by now. */
  private async abortIfDead(node: string, why: FetchFor, stop: AbortController): Promise<void> {
    if (stop.signal.aborted) return;
    if (this.knownDead(node) || (await this.heartbeatGone(node))) {
      this.foundDead(node, why.queue);
      stop.abort(new Error(`node ${node} is dead (its agent's heartbeat expired)`));
    }
  }

  /** lineage.ts nodeDead; a failed lookup (Redis away) counts as alive: nothing is asked of a node on a guess. */
  private heartbeatGone(node: string): Promise<boolean> {
    return nodeDead(this.opts.redis, this.opts.keys, node).catch(() => false);
  }

  private knownDead(node: string): boolean {
    const at = this.dead.get(node);
    return at !== undefined && Date.now() - at < DEAD_TRUST_MS;
  }

  /**
   * Whether a node found dead still is (its heartbeat looked at again once DEAD_TRUST_MS have
   * passed: a node may come back). Nodes never found dead cost nothing here.
   */
  private async stillDead(node: string): Promise<boolean> {
    if (!this.dead.has(node)) return false;
    if (this.knownDead(node)) return true;
    if (await this.heartbeatGone(node)) {
      this.dead.set(node, Date.now());
      return true;
    }
    this.dead.delete(node);
    return false;
  }

  /**
   * `node` is dead: trusted so for DEAD_TRUST_MS, and the producers of what the deliveries
   * waiting in `queue` would fetch from it are asked to run again now (once per node and queue
   * per RERUN_ASK_MS, whoever found it dead first), all at once, instead of
   * each when the runner gets to it (one after the other, each waiting for its re-run: a node
   * lost with 40 outputs its receiver had not taken cost ~40 s of re-runs in a row).
   */
  private foundDead(node: string, queue: string | undefined): void {
    // Trusted from the lookup that found it (not renewed by fetches that only knew it).
    if (!this.knownDead(node)) this.dead.set(node, Date.now());
    this.askAheadOnce(node, queue, `node ${node} is dead`);
  }

  /**
   * Nothing serves on live node `src` now: since when (returned), as this process saw it in a row, or as
   * another receiver found (its Redis note, kept while seen: a re-run fetching inputs from the
   * node its outputs were lost on need not wait UNSERVED_MS again). The note is written once
   * this process has seen it for UNSERVED_MS itself, and only read before then.
   */
  private async seeUnserved(src: string, now: number): Promise<number> {
    const { redis, keys } = this.opts;
    const seen = this.unserved.get(src);
    let since = seen && now - seen.seen < UNSERVED_SEEN_MS ? seen.since : now;
    if (now - since < UNSERVED_MS) {
      const noted = Number(await redis.get(keys.unserved(src)).catch(() => null));
      if (noted > 0 && noted < since) since = noted;
    } else {
      await redis.set(keys.unserved(src), String(since), 'PX', UNSERVED_SEEN_MS).catch(() => undefined);
    }
    this.unserved.set(src, { since, seen: now });
    return since;
  }

  /** askAhead, once per node and queue per RERUN_ASK_MS, whoever found the node lost first. */
  private askAheadOnce(node: string, queue: string | undefined, why: string): void {
    if (queue === undefined) return;
    const key = `${node}\u0000${queue}`;
    const last = this.askedAhead.get(key);
    if (last !== undefined && Date.now() - last < RERUN_ASK_MS) return;
    this.askedAhead.set(key, Date.now());
    void this.askAhead(node, queue, why).catch((e: Error) => this.opts.log(`asking ahead for re-runs of what ${node} kept: ${e.message}`));
  }

  /**
   * Ask re-runs for the blobs kept on `node` that deliveries waiting in `queue` reference (the
   * oldest ASK_AHEAD_MAX jobs: BullMQ's wait list, whose right end is taken first, and each
   * job's `data` field; a layout QUIET in scripts.ts relies on too).
   */
  private async askAhead(node: string, queue: string, why: string): Promise<void> {
    const { redis, keys } = this.opts;
    const ids = await redis.lrange(bullKey(keys, queue, 'wait'), -ASK_AHEAD_MAX, -1);
    const blobs = new Set<string>();
    // Oldest first (the right end): those the runner takes next.
    ids.reverse();
    for (let i = 0; i < ids.length; i += ASK_AHEAD_CHUNK) {
      const res = (await ids.slice(i, i + ASK_AHEAD_CHUNK).reduce((p, id) => p.hget(bullKey(keys, queue, id), 'data'), pipeline(redis)).exec()) ?? [];
      for (const [err, raw] of res) {
        if (err || typeof raw !== 'string') continue;
        try {
          for (const d of (JSON.parse(raw) as BundleJob).d) if (d.src === node) blobs.add(d.blob);
        } catch {
          // not one of ours
        }
      }
    }
    let asked = 0;
    for (const blob of blobs) if (await askRerun(redis, keys, blob, `${why} (asked ahead)`)) asked++;
    if (asked > 0) this.opts.log(`${why}: asked ahead for re-runs of ${asked} blob(s) that deliveries waiting in ${queue} need`);
  }

  /** The path of blob's file in node src's store when this process can read that store. */
  private async nearFile(src: string, blob: string): Promise<string | undefined> {
    checkBlobId(blob);
    const dir = await this.siteOf(src);
    return dir === undefined ? undefined : join(dir, blob);
  }

  private async siteOf(node: string): Promise<string | undefined> {
    if (node === this.opts.node && this.store) return this.store.dir;
    const hit = this.sites.get(node);
    if (hit && Date.now() - hit.at < SITE_TTL_MS) return hit.dir;
    let dir: string | undefined;
    const all = await this.opts.redis.hgetall(this.opts.keys.dataDirs(node)).catch(() => ({}));
    for (const v of Object.values(all)) {
      try {
        dir = reachableDir(JSON.parse(v) as StoreSite);
      } catch {
        // not a site record
      }
      if (dir) break;
    }
    this.sites.set(node, { dir, at: Date.now() });
    return dir;
  }

  /**
   * A completed transfer is evidence about the link src -> this node (config/link-transfers.ts),
   * never awaited, so the item never waits for it. With batchNotes it rides along with the owner's
   * next Redis call (a separate write costs this process and Redis about as much CPU as the
   * commit it would follow); a timer writes what nobody took within NOTES_MS.
   */
  private noteTransfer(src: string, bytes: number, seconds: number): void {
    if (bytes < LINK_TRANSFER_MIN_BYTES || src === this.opts.node) return;
    const key = this.opts.keys.linkTransfers(src, this.opts.node);
    const t: LinkTransfer = { bytes, seconds, at: Date.now() };
    this.notes.push([key, JSON.stringify(t)]);
    if (this.notes.length > LINK_TRANSFERS_KEPT) this.notes.shift();
    if (!this.opts.batchNotes) {
      this.writeNotes();
    } else if (!this.notesTimer) {
      this.notesTimer = setTimeout(() => this.writeNotes(), NOTES_MS);
      this.notesTimer.unref();
    }
  }

  /** Queue the transfers' records not yet written on `pipe` (the caller sends it). */
  flushNotes(pipe: ChainableCommander): void {
    clearTimeout(this.notesTimer);
    this.notesTimer = undefined;
    for (const [key, t] of this.notes.splice(0)) pipe.lpush(key, t).ltrim(key, 0, LINK_TRANSFERS_KEPT - 1);
  }

  private writeNotes(): void {
    if (this.notes.length === 0) return;
    const pipe = pipeline(this.opts.redis);
    this.flushNotes(pipe);
    void pipe.exec().catch(() => undefined);
  }

  /**
   * A place in node `src`'s lane, taken now: its `use(fn)` runs `fn` once every transfer placed
   * before it has ended or released the lane (`release`: the next one may start now; implied when
   * `fn` settles). A place must be used or skipped, or the lane behind it waits for ever.
   */
  private place(src: string): LanePlace {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const before = this.lanes.get(src) ?? Promise.resolve();
    this.lanes.set(src, released);
    void released.then(() => {
      if (this.lanes.get(src) === released) this.lanes.delete(src);
    });
    let used = false;
    return {
      src,
      use: <T>(fn: (release: () => void) => Promise<T>): Promise<T> => {
        if (used) throw new Error('a lane place is used once');
        used = true;
        const run = before.then(() => fn(release));
        void run.then(release, release);
        return run;
      },
      skip: () => {
        if (used) return;
        used = true;
        // Behind the ones before it, so the order holds for those after.
        void before.then(release);
      },
    };
  }

  /** Whether this node's store holds a blob. */
  holds(blob: string): boolean {
    return this.store?.has(blob) ?? false;
  }

  /** Endpoints of a node's runners, newest first (a dead runner's entry is tried last). */
  private async endpointsOf(node: string, refresh: boolean): Promise<string[]> {
    const cached = this.endpoints.get(node);
    if (cached && !(refresh && Date.now() - cached.at > 200)) return cached.list;
    const all = await this.opts.redis.hgetall(this.opts.keys.dataNodes(node));
    const list = Object.entries(all).sort((a, b) => Number(b[1]) - Number(a[1])).map(([ep]) => ep);
    this.endpoints.set(node, { list, at: Date.now() });
    return list;
  }

  /**
   * Wait (at most `ms`) until no blob of this store has a record any more: every receiver took
   * what this node made, so the endpoint can go without leaving anyone's input behind.
   */
  private async drain(ms: number): Promise<void> {
    const { redis, keys, log } = this.opts;
    const deadline = Date.now() + ms;
    let left = 0;
    for (;;) {
      const ids = this.store!.scan().map((f) => f.id);
      const res = ids.length ? await ids.reduce((p, id) => p.exists(keys.blob(id)), pipeline(redis)).exec().catch(() => null) : [];
      left = res ? res.filter(([err, n]) => !err && Number(n) > 0).length : 0;
      if (left === 0) return;
      if (Date.now() >= deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    log(`moving away with ${left} stored file(s) not yet taken after ${ms / 1000} s: their receivers cannot fetch them from this node any more`);
  }

  /**
   * This process's runs that kept `blobs` here got their commit's reply: the files may go as soon
   * as their records are gone (store.ts markCommitted).
   */
  committed(blobs: string[]): void {
    if (blobs.length > 0) this.store?.markCommitted(blobs);
  }

  /** Remove the files whose blob records are gone (every receiver took them). One sweep at a time. */
  private sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    const { redis, keys } = this.opts;
    this.sweptAt = Date.now();
    try {
      await this.store!.sweep(async (ids) => {
        const pipe = pipeline(redis);
        for (const id of ids) pipe.exists(keys.blob(id));
        const res = await pipe.exec();
        // An error (Redis away) keeps the file: only a clear "gone" removes bytes.
        if (!res) return ids.map(() => true);
        return res.map(([err, n]) => Boolean(err) || Number(n) > 0);
      }, SWEEP_GRACE_MS);
    } catch {
      // Redis unreachable: sweep next time
    }
  }

  async close(): Promise<void> {
    if (this.sharedAs !== undefined) {
      const entry = producers.get(this.sharedAs);
      if (entry && --entry.refs > 0) return;
      producers.delete(this.sharedAs);
      this.sharedAs = undefined;
    }
    clearInterval(this.sweeper);
    await this.sweeping;
    this.writeNotes();
    if (this.store && (await this.opts.redis.exists(this.opts.keys.moving).catch(() => 0)) > 0) await this.drain(DRAIN_MS);
    if (this.endpoint) {
      const { redis, keys, node } = this.opts;
      await pipeline(redis).hdel(keys.dataNodes(node), this.endpoint).hdel(keys.dataDirs(node), this.endpoint).exec().catch(() => undefined);
    }
    await this.server?.close();
  }
}

/** This side's address of the Redis connection: the interface that faces the rest of the cluster. */
function localAddress(redis: Redis): string | undefined {
  const stream = (redis as unknown as { stream?: { localAddress?: string } }).stream;
  const a = stream?.localAddress;
  return a ? a.replace(/^::ffff:/, '') : undefined;
}
