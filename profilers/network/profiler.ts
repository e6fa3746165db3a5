// DRUPE network profiler of one agent: probes every live peer, keeps the samples in a capped
// Redis list per directed link and republishes that link's fit after every new sample.
// Start-up: a bootstrap burst (every size to every peer, `bootstrapRounds` times, largest size
// first so the first fit already spans the whole range); new peers get the same burst as soon
// as they appear. Then every `refreshMs`: one probe of a random size to every peer, as DRUPE.
// Probes of one agent run one at a time, so an agent never competes with itself for its link.
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import type { LinkProfile } from '../../config/types.js';
import type { AgentRegistration } from '../agent/registry.js';
import { fitLink, type LinkSample } from './fit.js';
import { probe } from './probe-client.js';

export const DEFAULT_PROBE_SIZES_KB = [1, 10, 100, 1000, 10000];

export interface NetworkOptions {
  /** Probe sizes in bytes. */
  sizes: number[];
  /** Times the bootstrap burst sends every size to a new peer. */
  bootstrapRounds: number;
  /** Period of the steady-state probe round. */
  refreshMs: number;
  /** Samples kept per directed link. */
  maxSamples: number;
  /** Upper bound on one probe. */
  timeoutMs: number;
}

export const defaultNetworkOptions = (): NetworkOptions => ({
  sizes: DEFAULT_PROBE_SIZES_KB.map((k) => k * 1024),
  bootstrapRounds: 3,
  refreshMs: 60_000,
  maxSamples: 50,
  timeoutMs: 60_000,
});

interface Peer {
  reg: AgentRegistration;
  pending: number[];
  /** Failed probes re-queued so far (reset when the peer re-registers). */
  retries: number;
}

const MAX_RETRIES = 5;

type Log = (line: string) => void;

export class NetworkProfiler {
  private readonly peers = new Map<string, Peer>();
  private running = false;
  private wake?: () => void;
  private loop?: Promise<void>;
  private refreshTimer?: NodeJS.Timeout;
  private turn = 0;
  private readonly abort = new AbortController();
  /** Probes sent and bytes probed since start (for tests and the bench). */
  readonly stats = { probes: 0, bytes: 0, failures: 0 };

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly node: string,
    private readonly opts: NetworkOptions,
    private readonly log: Log,
  ) {}

  start(): void {
    this.running = true;
    this.refreshTimer = setInterval(() => this.refreshRound(), this.opts.refreshMs);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.refreshTimer);
    this.abort.abort();
    this.wake?.();
    await this.loop;
  }

  /** Called with the live agents after every heartbeat: bootstrap new or moved peers, forget gone ones. */
  setPeers(regs: AgentRegistration[]): void {
    const live = new Set<string>();
    for (const reg of regs) {
      if (reg.node === this.node) continue;
      live.add(reg.node);
      const known = this.peers.get(reg.node);
      if (known && known.reg.host === reg.host && known.reg.port === reg.port && known.reg.startedAt === reg.startedAt) {
        known.reg = reg;
        continue;
      }
      this.peers.set(reg.node, { reg, pending: this.bootstrapPlan(), retries: 0 });
      this.log(`peer ${reg.node} at ${reg.host}:${reg.port}: bootstrap probing`);
    }
    for (const name of [...this.peers.keys()]) if (!live.has(name)) this.peers.delete(name);
    this.wake?.();
  }

  private bootstrapPlan(): number[] {
    const desc = [...this.opts.sizes].sort((a, b) => b - a);
    const plan: number[] = [];
    for (let r = 0; r < this.opts.bootstrapRounds; r++) plan.push(...desc);
    return plan;
  }

  private refreshRound(): void {
    const sizes = this.opts.sizes;
    for (const peer of this.peers.values()) {
      if (peer.pending.length === 0) peer.pending.push(sizes[Math.floor(Math.random() * sizes.length)]!);
    }
    this.wake?.();
  }

  /** Round-robin over peers with pending probes, so every peer gets its first fit early. */
  private next(): { peer: Peer; bytes: number } | undefined {
    const list = [...this.peers.values()].filter((p) => p.pending.length > 0);
    if (list.length === 0) return undefined;
    const peer = list[this.turn++ % list.length]!;
    return { peer, bytes: peer.pending.shift()! };
  }

  private async run(): Promise<void> {
    while (this.running) {
      const job = this.next();
      if (!job) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const { reg } = job.peer;
      try {
        const seconds = await probe(reg.host, reg.port, job.bytes, this.opts.timeoutMs, this.abort.signal);
        this.stats.probes++;
        this.stats.bytes += job.bytes;
        if (!this.running) break;
        await this.record(reg.node, { bytes: job.bytes, seconds, at: Date.now() });
      } catch (e) {
        this.stats.failures++;
        if (this.running && this.peers.has(reg.node)) {
          this.log(`probe to ${reg.node} (${job.bytes} B) failed: ${(e as Error).message}`);
          // Try that size again later (bounded), so a hiccup cannot leave a link without a fit.
          if (job.peer.retries < MAX_RETRIES) {
            job.peer.retries++;
            job.peer.pending.push(job.bytes);
          }
        }
      }
    }
  }

  private async record(peer: string, sample: LinkSample): Promise<void> {
    const listKey = this.keys.linkSamples(this.node, peer);
    const res = await this.redis
      .multi()
      .lpush(listKey, JSON.stringify(sample))
      .ltrim(listKey, 0, this.opts.maxSamples - 1)
      .lrange(listKey, 0, -1)
      .exec();
    const raw = (res?.[2]?.[1] ?? []) as string[];
    const samples: LinkSample[] = [];
    for (const r of raw) {
      try {
        samples.push(JSON.parse(r) as LinkSample);
      } catch {
        // a foreign or truncated entry: ignore it
      }
    }
    const fit = fitLink(samples);
    const sizes = new Set(samples.map((s) => s.bytes)).size;
    if (!fit || sizes < Math.min(3, this.opts.sizes.length)) return;
    const profile: LinkProfile = {
      from: this.node,
      to: peer,
      a: fit.a,
      b: fit.b,
      c: fit.c,
      latencySec: fit.latencySec,
      bandwidthBytesPerSec: fit.bandwidthBytesPerSec,
      samples: fit.samples,
      updatedAt: Date.now(),
      model: fit.model,
      sampledAt: Math.max(...samples.map((s) => s.at)),
    };
    await this.redis.set(this.keys.linkFit(this.node, peer), JSON.stringify(profile));
  }
}
