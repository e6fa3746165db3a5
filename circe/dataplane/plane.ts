// The direct data path of one runner process (or the home's sink): outputs larger than what
// travels inline stay on the producing node (store.ts) and are served there (server.ts); a
// receiver fetches them from that node, over the link between the two nodes (client.ts). Redis
// keeps everything else: queues of deliveries, the blob's record (a pointer naming the node),
// holders, done markers. So every guarantee of the central path holds unchanged; only where the
// bytes live differs. See circe/README.md "Data path".
import type { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { getuid } from 'node:process';
import type { AppKeys } from '../queue/keys.js';
import type { PipelineSettings } from '../queue/settings.js';
import { BlobMissingError, getBlob } from './client.js';
import { askRerun, nodeDead, pointedNode } from './lineage.js';
import { DataServer } from './server.js';
import { NodeStore } from './store.js';

/** Files younger than this are never swept: their commit may still be on its way to Redis. */
export const SWEEP_GRACE_MS = 60_000;
const SWEEP_EVERY_MS = 10_000;
/** One fetch attempt gives up after this long without an answer. */
const ATTEMPT_TIMEOUT_MS = 10_000;

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
  log(msg: string): void;
}

export class DataPlane {
  private store?: NodeStore;
  private server?: DataServer;
  private endpoint?: string;
  private sweeper?: NodeJS.Timeout;
  private readonly endpoints = new Map<string, { list: string[]; at: number }>();
  readonly stats = { fetched: 0, fetchedBytes: 0, local: 0, stored: 0, storedBytes: 0, retries: 0, reruns: 0 };

  private constructor(private readonly opts: DataPlaneOptions, private readonly token: string) {}

  /** A plane that only fetches (the sink): no store, no endpoint. */
  static async reader(opts: DataPlaneOptions): Promise<DataPlane> {
    return new DataPlane(opts, await ensureDataToken(opts.redis, opts.keys));
  }

  /** A plane that stores this node's outputs and serves them to the other nodes. */
  static async producer(opts: DataPlaneOptions & { dir: string }): Promise<DataPlane> {
    const plane = new DataPlane(opts, await ensureDataToken(opts.redis, opts.keys));
    await plane.open(opts.dir);
    return plane;
  }

  private async open(dir: string): Promise<void> {
    const { redis, keys, node, settings } = this.opts;
    this.store = new NodeStore(dir, { maxBytes: settings.storeBytes, waitMs: settings.fetchPatienceMs });
    this.server = new DataServer({ store: this.store, token: this.token });
    const port = await this.server.start();
    const host = this.opts.advertise ?? localAddress(redis) ?? '127.0.0.1';
    this.endpoint = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    await redis.hset(keys.dataNodes(node), this.endpoint, String(Date.now()));
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

  /**
   * The bytes of a blob held on node `src`: from this node's store, or fetched from `src`. A node
   * that is dead (lineage.ts nodeDead) or answers that it lacks the blob has the blob's producer
   * asked to run again (lineage); the re-run points the blob's record at its own node, where the
   * next round finds it.
   */
  async fetch(src: string, blob: string): Promise<Buffer> {
    const { settings, redis, keys } = this.opts;
    const deadline = Date.now() + settings.fetchPatienceMs;
    let backoff = 100;
    let last: Error | undefined;
    let asked = false;
    for (let round = 0; ; round++) {
      if (src === this.opts.node && this.store) {
        const mine = await this.store.get(blob);
        if (mine) {
          this.stats.local++;
          return mine;
        }
      }
      const list = await this.endpointsOf(src, round > 0);
      let missing = 0;
      for (const ep of list) {
        try {
          const bytes = await getBlob(ep, blob, { token: this.token, maxBytes: settings.maxBlobBytes, timeoutMs: ATTEMPT_TIMEOUT_MS });
          this.stats.fetched++;
          this.stats.fetchedBytes += bytes.length;
          return bytes;
        } catch (e) {
          last = e as Error;
          if (e instanceof BlobMissingError) missing++;
        }
      }
      // Every runner of the node answered and none holds it: waiting alone will not bring it back.
      const allMissing = list.length > 0 && missing === list.length;
      if (allMissing || round > 0) {
        // A re-run may have moved the blob to another node meanwhile.
        const at = await pointedNode(redis, keys, blob).catch(() => undefined);
        if (at && at !== src) {
          this.opts.log(`blob ${blob.slice(0, 8)} is now kept on ${at} (was ${src})`);
          src = at;
          backoff = 100;
          continue;
        }
        const dead = !allMissing && (await nodeDead(redis, keys, src).catch(() => false));
        if (allMissing || dead) {
          const why = allMissing ? `node ${src} does not hold it` : `node ${src} is dead`;
          const lineage = await askRerun(redis, keys, blob, why).catch(() => true);
          if (!lineage && allMissing) throw last!;
          if (lineage && !asked) {
            asked = true;
            this.stats.reruns++;
            this.opts.log(`blob ${blob.slice(0, 8)}: ${why}; asked its producer to run again (lineage)`);
          }
        }
      }
      if (Date.now() + backoff > deadline) {
        throw new Error(`could not fetch blob ${blob} from node ${src} within ${settings.fetchPatienceMs} ms: ${last?.message ?? 'no data endpoint registered for that node'}`);
      }
      if (round === 0 && !allMissing) this.opts.log(`node ${src} unreachable for blob ${blob.slice(0, 8)} (${last?.message ?? 'no endpoint'}); retrying for up to ${settings.fetchPatienceMs / 1000} s`);
      this.stats.retries++;
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(2000, backoff * 2);
    }
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

  /** Remove the files whose blob records are gone (every receiver took them). */
  private async sweep(): Promise<void> {
    const { redis, keys } = this.opts;
    try {
      await this.store!.sweep(async (ids) => {
        const pipe = redis.pipeline();
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
    clearInterval(this.sweeper);
    if (this.endpoint) await this.opts.redis.hdel(this.opts.keys.dataNodes(this.opts.node), this.endpoint).catch(() => undefined);
    await this.server?.close();
  }
}

/** This side's address of the Redis connection: the interface that faces the rest of the cluster. */
function localAddress(redis: Redis): string | undefined {
  const stream = (redis as unknown as { stream?: { localAddress?: string } }).stream;
  const a = stream?.localAddress;
  return a ? a.replace(/^::ffff:/, '') : undefined;
}
