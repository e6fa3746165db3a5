// The node agent: registers in Redis with a heartbeat, serves the probe endpoint, runs the
// network and resource profilers, and executes requests from its Redis inbox (execution
// profiling, distributed WAVE). stop() deregisters, so a clean shutdown disappears at once;
// a killed agent disappears when its heartbeat key expires. A starting agent announces itself on
// a pub/sub channel, so the running ones take it as a peer (and bootstrap their probes to it) at
// once instead of at their next heartbeat: a fresh cluster's profile is complete sooner.
import { maskUrl } from '../../config/cluster/mask.js';
import { hostname } from 'node:os';
import { Redis } from '../../circe/queue/libs.js';
import { redisKeys, type Keys } from '../../config/redis-keys.js';
import { runtimeError } from '../../config/errors.js';
import { LossProber, defaultLossOptions, type LossOptions } from '../faults/loss-prober.js';
import { ProbeServer } from '../network/probe-server.js';
import { NetworkProfiler, defaultNetworkOptions, type NetworkOptions } from '../network/profiler.js';
import { OverheadProber, defaultOverheadOptions, type OverheadOptions } from '../overhead/prober.js';
import { ResourceProfiler, defaultResourceOptions, type ResourceOptions } from '../resource/profiler.js';
import { DEFAULT_HEARTBEAT_MS, deregister, heartbeat, liveAgents, type AgentRegistration } from './registry.js';
import type { AgentMessage } from './inbox.js';

/** Heartbeats without an answer before the agent drops its Redis connection and opens a new one. */
const STALLED_BEATS = 3;

export interface AgentContext {
  node: string;
  redis: Redis;
  keys: Keys;
  log: (line: string) => void;
  /** Live agents as of the last heartbeat. */
  peers(): AgentRegistration[];
  resources: ResourceProfiler;
}

export type MessageHandler = (msg: AgentMessage, ctx: AgentContext) => Promise<void>;

export interface AgentOptions {
  node: string;
  redisUrl: string;
  prefix?: string;
  listenHost?: string;
  /** 0 = any free port. */
  listenPort?: number;
  /** Address peers use to reach this agent (default: the listen host, or the host name for 0.0.0.0). */
  advertiseHost?: string;
  heartbeatMs?: number;
  network?: Partial<NetworkOptions>;
  /** Echo-probe loss measurement for failure localisation (false: off). */
  loss?: Partial<LossOptions> | false;
  resource?: Partial<ResourceOptions>;
  /** Hop and invocation costs and the home's links (profilers/overhead; false: off). */
  overhead?: Partial<OverheadOptions> | false;
  handlers?: Record<string, MessageHandler>;
  log?: (line: string) => void;
}

export class Agent {
  readonly node: string;
  readonly keys: Keys;
  private redis?: Redis;
  private inboxConn?: Redis;
  /** Subscribed to keys.agentsJoined(); undefined where the Redis user may not subscribe. */
  private joinSub?: Redis;
  private readonly server: ProbeServer;
  private network?: NetworkProfiler;
  private loss?: LossProber;
  private resources?: ResourceProfiler;
  private overhead?: OverheadProber;
  private reg?: AgentRegistration;
  private beatTimer?: NodeJS.Timeout;
  /** When the beat under way started (0: none): beats do not pile up behind a stalled connection. */
  private beatSince = 0;
  private tickAt = 0;
  private inboxLoop?: Promise<void>;
  private running = false;
  private live: AgentRegistration[] = [];
  private readonly inflight = new Set<Promise<void>>();
  private readonly log: (line: string) => void;

  constructor(private readonly opts: AgentOptions) {
    this.node = opts.node;
    this.keys = redisKeys(opts.prefix);
    this.server = new ProbeServer(opts.node);
    this.log = opts.log ?? ((line) => process.stderr.write(`[agent ${opts.node}] ${line}\n`));
  }

  get address(): { host: string; port: number } | undefined {
    return this.reg && { host: this.reg.host, port: this.reg.port };
  }

  get networkStats(): NetworkProfiler['stats'] | undefined {
    return this.network?.stats;
  }

  get lossStats(): LossProber['stats'] | undefined {
    return this.loss?.stats;
  }

  async start(): Promise<void> {
    const o = this.opts;
    const redis = new Redis(o.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 3 });
    redis.on('error', () => undefined); // ioredis reconnects; failing commands are logged where used
    try {
      await redis.connect();
    } catch (e) {
      redis.disconnect();
      throw runtimeError(`cannot connect to Redis at ${maskUrl(o.redisUrl)}: ${(e as Error).message}`, {
        hint: 'start Redis or pass --redis redis://host:port (or set JUPITER_REDIS_URL)',
      }, e);
    }
    this.redis = redis;
    const host = o.listenHost ?? '127.0.0.1';
    let addr;
    try {
      addr = await this.server.listen(host, o.listenPort ?? 0);
    } catch (e) {
      redis.disconnect();
      throw runtimeError(`cannot listen on ${host}:${o.listenPort ?? 0}: ${(e as Error).message}`, { hint: 'choose another --listen host:port' }, e);
    }
    if (o.loss !== false) {
      const loss = new LossProber(redis, this.keys, this.node, { ...defaultLossOptions(), ...o.loss }, this.log);
      if (await loss.listen(host, addr.port)) this.loss = loss;
    }
    const wildcard = host === '0.0.0.0' || host === '::';
    this.reg = {
      node: this.node,
      host: o.advertiseHost ?? (wildcard ? hostname() : host),
      port: addr.port,
      pid: process.pid,
      startedAt: Date.now(),
      heartbeatAt: Date.now(),
      periodMs: o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
      hostname: hostname(),
    };
    this.running = true;
    // Subscribed before registering, announced after: of two agents starting together, the later
    // one's read of the live agents sees the earlier, and the earlier hears the later's announcement.
    await this.listenForPeers();
    await this.beat();
    try {
      await redis.publish(this.keys.agentsJoined(), this.node);
    } catch (e) {
      this.log(`announcing this agent failed (peers find it at their next heartbeat): ${(e as Error).message}`);
    }
    this.beatTimer = setInterval(() => void this.beat(), this.reg.periodMs);

    this.resources = new ResourceProfiler(redis, this.keys, this.node, { ...defaultResourceOptions(), ...o.resource }, this.log);
    await this.resources.start();
    this.network = new NetworkProfiler(redis, this.keys, this.node, { ...defaultNetworkOptions(), ...o.network }, this.log);
    this.network.start();
    this.network.setPeers(this.live);
    this.loss?.setPeers(this.live);
    this.loss?.start();
    if (o.overhead !== false) {
      this.overhead = new OverheadProber(redis, this.keys, this.node, { ...defaultOverheadOptions(), ...o.overhead }, this.log);
      this.overhead.start();
    }

    this.inboxConn = redis.duplicate();
    this.inboxConn.on('error', () => undefined);
    this.inboxLoop = this.readInbox();
    this.log(`listening on ${this.reg.host}:${this.reg.port} (probe endpoint); heartbeat every ${this.reg.periodMs} ms`);
  }

  private async beat(): Promise<void> {
    if (!this.running || !this.redis || !this.reg) return;
    // A late tick means this process was starved (a busy machine), not that Redis is silent: the
    // beat under way is not judged on this one.
    const now = Date.now();
    const onTime = now - this.tickAt < 1.5 * this.reg.periodMs;
    this.tickAt = now;
    if (this.beatSince) {
      // The last beat has not come back. A connection stalled behind a cut link is retransmitted
      // at growing intervals, so once the link returns it may stay silent for tens of seconds more
      // (after a 30 s cut of the home's links the hub took agents that were late for lost and moved
      // every task of the testbed's chain); a new connection is up within a few seconds.
      if (onTime && now - this.beatSince > STALLED_BEATS * this.reg.periodMs && this.redis.status === 'ready') {
        this.log(`no answer from Redis for ${STALLED_BEATS} heartbeats; connecting again`);
        this.beatSince = now;
        this.redis.disconnect(true);
      }
      return;
    }
    this.beatSince = now;
    try {
      await heartbeat(this.redis, this.keys, this.reg);
      await this.readPeers();
    } catch (e) {
      this.log(`heartbeat failed: ${(e as Error).message}`);
    } finally {
      this.beatSince = 0;
    }
  }

  private async readPeers(): Promise<void> {
    this.live = await liveAgents(this.redis!, this.keys);
    this.network?.setPeers(this.live);
    this.loss?.setPeers(this.live);
  }

  /** Another agent announcing itself: read the live agents now (the heartbeat does so anyway). */
  private async listenForPeers(): Promise<void> {
    const sub = this.redis!.duplicate();
    sub.on('error', () => undefined); // ioredis reconnects and subscribes again
    sub.on('message', (_channel: string, node: string) => {
      if (node === this.node || !this.running) return;
      this.readPeers().catch((e: Error) => this.log(`reading the agents after ${node} joined failed: ${e.message}`));
    });
    try {
      await sub.subscribe(this.keys.agentsJoined());
      this.joinSub = sub;
    } catch (e) {
      sub.disconnect();
      this.log(`cannot subscribe to ${this.keys.agentsJoined()} (new peers are found at the next heartbeat): ${(e as Error).message}`);
    }
  }

  private context(): AgentContext {
    return {
      node: this.node,
      redis: this.redis!,
      keys: this.keys,
      log: this.log,
      peers: () => this.live,
      resources: this.resources!,
    };
  }

  private async readInbox(): Promise<void> {
    const conn = this.inboxConn!;
    const key = this.keys.agentInbox(this.node);
    while (this.running) {
      let res: [string, string] | null = null;
      try {
        res = await conn.blpop(key, 1);
      } catch (e) {
        if (!this.running) break;
        this.log(`inbox read failed: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (!res) continue;
      let msg: AgentMessage;
      try {
        msg = JSON.parse(res[1]) as AgentMessage;
      } catch {
        this.log('ignoring a malformed inbox message');
        continue;
      }
      const handler = this.opts.handlers?.[msg.type];
      if (!handler) {
        this.log(`ignoring inbox message of unknown type ${JSON.stringify(msg.type)}`);
        continue;
      }
      // Handlers run concurrently: a long execution-profiling run must not hold up WAVE.
      const p = handler(msg, this.context())
        .catch((e: unknown) => this.log(`${msg.type} failed: ${(e as Error).message}`))
        .finally(() => this.inflight.delete(p));
      this.inflight.add(p);
    }
  }

  /** Stop probing and serving, deregister, close connections. Safe to call twice. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearInterval(this.beatTimer);
    this.resources?.stop();
    this.inboxConn?.disconnect();
    this.joinSub?.disconnect();
    await Promise.allSettled([this.network?.stop(), this.loss?.stop(), this.overhead?.stop(), this.inboxLoop, this.server.close()]);
    await Promise.race([Promise.allSettled([...this.inflight]), new Promise((r) => setTimeout(r, 2000))]);
    try {
      await deregister(this.redis!, this.keys, this.node);
      await this.redis!.quit();
    } catch {
      this.redis?.disconnect();
    }
  }
}

