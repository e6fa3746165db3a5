// DRUPE network profiler of one agent: probes every live peer, keeps the samples in a capped
// Redis list per directed link and republishes that link's fit after every new sample.
// Start-up: a bootstrap burst (every size to every peer, `bootstrapRounds` times, largest size
// first so the first fit already spans the whole range); new peers get the same burst as soon
// as they appear. Then continuously: one probe of a random size to every peer every `refreshMs`,
// as DRUPE, stretched by the traffic budget (budget.ts: steady probes carry at most `budget` of
// the link's capacity) and restricted to the sizes the budget affords at that pace; where that
// excludes the largest size, it has a share of the budget on its own schedule, drawn early when the
// other sizes show the fit stale (budget.ts largestDue, staleEvidence; where no affordable size
// counts as evidence, the smallest that does has a share of its own, evidenceDue). The fit uses
// the samples of the link's current regime only (window.ts): when a change is detected the list
// is cut at the change (so restarts and other readers agree) and the link is re-probed at once.
// Probes of one agent run one at a time, so an agent never competes with itself for its link, and
// a pair of hosts probes one direction at a time (pair-lock.ts): a peer busy probing us is skipped
// for a moment and another peer probed meanwhile.
// Real transfers are evidence too: the data path's receivers record theirs per directed link
// (config/link-transfers.ts); the window and the fit take them with the probes, and the agent
// looks for new ones every tick, so a 1 MiB output that suddenly takes seconds marks the change
// when it completes instead of after probes wait out their timeouts.
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import type { LinkProfile } from '../../config/types.js';
import type { AgentRegistration } from '../agent/registry.js';
import { affordableSizes, budgetCapacity, budgetPauseMs, budgetSplit, DEFAULT_PROBE_BUDGET, evidenceDue, isEvidenceSize, largestDue, largestMisses, staleEvidence } from './budget.js';
import { fitLink, type LinkSample } from './fit.js';
import { lockPair, unlockPair } from './pair-lock.js';
import { probe, ProbeTimeoutError } from './probe-client.js';
import { DEFAULT_MAX_AGE_MS, linkWindow } from './window.js';

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
  /** Share of a link's measured capacity its steady-state probes may use (0 < budget <= 1). */
  budget: number;
  /** Samples older than this leave the fit when enough newer ones remain. */
  maxAgeMs: number;
  /** After a detected change, re-probe with the sizes expected to take at most this long. */
  reprobeMaxMs: number;
}

export const defaultNetworkOptions = (): NetworkOptions => ({
  sizes: DEFAULT_PROBE_SIZES_KB.map((k) => k * 1024),
  bootstrapRounds: 3,
  refreshMs: 60_000,
  maxSamples: 50,
  timeoutMs: 60_000,
  budget: DEFAULT_PROBE_BUDGET,
  maxAgeMs: DEFAULT_MAX_AGE_MS,
  reprobeMaxMs: 5_000,
});

interface Job {
  bytes: number;
  /** Steady-state probe (counted against the budget) rather than a bootstrap or re-probe. */
  steady: boolean;
  /** A largest probe drawn early on the evidence that the fit is stale: the fit's bandwidth then. */
  early?: number;
}

interface Peer {
  reg: AgentRegistration;
  pending: Job[];
  /** Failed probes re-queued so far (reset when the peer re-registers). */
  retries: number;
  /** Earliest time of the next steady probe (ms since epoch). */
  nextAt: number;
  /** Capacity the budget is taken from (bytes/s), once known. */
  capacity?: number;
  /** Fitted bandwidth last published. */
  fitBandwidth?: number;
  /** The peer was probing us: not before this time (ms since epoch). */
  heldUntil: number;
  /** End of the last probe of the largest size (ms since epoch; 0 = never). */
  largestAt: number;
  /** Rate the other sizes showed since the last probe of the largest (budget.ts staleEvidence). */
  evidence?: number;
  /** End of the last probe of a size that counts as evidence (budget.ts isEvidenceSize; ms since epoch, 0 = never). */
  evidenceAt: number;
  /** No steady probe of the largest size since the bootstrap or the link's last change (budget.ts budgetSplit). */
  unchecked: boolean;
  /** Early largest probes in a row that found the fit right (budget.ts largestMisses). */
  largestMisses: number;
  /** End of the newest real transfer (link-transfers) the fit has seen (ms since epoch). */
  transfersSeen: number;
}

/** Steady-state probe traffic to one peer (for tests and the bench: the budget in use). */
export interface SteadyTraffic {
  bytes: number;
  probes: number;
  /** When the first steady probe started and the last one ended (ms). */
  firstAt: number;
  lastAt: number;
  /** Capacity the budget was last taken from (bytes/s). */
  capacity: number;
}

const MAX_RETRIES = 5;
/** How long a peer whose pair lock was taken is skipped before asking again. */
const HELD_RETRY_MS = 50;
/**
 * After a probe, the same pair is not taken again for this long: a peer waiting for the lock
 * (asking every HELD_RETRY_MS) gets its turn, so a side retrying a failed probe cannot starve the
 * other (a cut link must be seen from both ends within a probe timeout or two).
 */
const PAIR_GAP_MS = 150;

type Log = (line: string) => void;

export class NetworkProfiler {
  private readonly peers = new Map<string, Peer>();
  private running = false;
  private wake?: () => void;
  private loop?: Promise<void>;
  private refreshTimer?: NodeJS.Timeout;
  private turn = 0;
  /** Fits run one at a time (a probe's and a new transfer's may meet): each reads and cuts the lists. */
  private fitting: Promise<void> = Promise.resolve();
  private polling = false;
  private readonly abort = new AbortController();
  /** Probes sent and bytes probed since start (for tests and the bench). */
  readonly stats = { probes: 0, bytes: 0, failures: 0, changes: 0, steady: new Map<string, SteadyTraffic>() };

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly node: string,
    private readonly opts: NetworkOptions,
    private readonly log: Log,
  ) {}

  start(): void {
    this.running = true;
    // The tick only checks who is due; the pace itself comes from each peer's nextAt.
    this.refreshTimer = setInterval(() => this.refreshRound(), Math.min(this.opts.refreshMs, 1000));
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
      this.peers.set(reg.node, { reg, pending: this.bootstrapPlan(), retries: 0, nextAt: 0, heldUntil: 0, largestAt: 0, evidenceAt: 0, unchecked: true, largestMisses: 0, transfersSeen: 0 });
      this.log(`peer ${reg.node} at ${reg.host}:${reg.port}: bootstrap probing`);
    }
    for (const name of [...this.peers.keys()]) if (!live.has(name)) this.peers.delete(name);
    this.wake?.();
  }

  private bootstrapPlan(): Job[] {
    const desc = [...this.opts.sizes].sort((a, b) => b - a);
    const plan: Job[] = [];
    for (let r = 0; r < this.opts.bootstrapRounds; r++) plan.push(...desc.map((bytes) => ({ bytes, steady: false })));
    return plan;
  }

  private refreshRound(): void {
    const now = Date.now();
    let due = false;
    for (const peer of this.peers.values()) {
      if (peer.pending.length > 0 || now < peer.nextAt) continue;
      peer.pending.push(this.steadyJob(peer, now));
      due = true;
    }
    if (due) this.wake?.();
    void this.pollTransfers();
  }

  /** New real transfers to a peer since its last fit: fit again (one pipelined read per tick). */
  private async pollTransfers(): Promise<void> {
    if (this.polling || this.peers.size === 0) return;
    this.polling = true;
    try {
      const peers = [...this.peers.values()];
      const res = await this.redis.pipeline(peers.map((p) => ['lindex', this.keys.linkTransfers(this.node, p.reg.node), 0])).exec();
      peers.forEach((p, i) => {
        const at = parseSample(res?.[i]?.[1])?.at ?? 0;
        if (at > p.transfersSeen && this.running) void this.record(p).catch((e: Error) => this.log(`fit of the link to ${p.reg.node} failed: ${e.message}`));
      });
    } catch {
      // Redis away: the next tick asks again
    } finally {
      this.polling = false;
    }
  }

  /** A steady probe: a size the budget affords at the refresh pace, or the largest when due, maybe early (budget.ts). */
  private steadyJob(peer: Peer, now: number): Job {
    const { sizes, budget, refreshMs } = this.opts;
    if (peer.capacity === undefined) return { bytes: sizes[Math.floor(Math.random() * sizes.length)]!, steady: true };
    const split = budgetSplit(sizes, peer.capacity, budget, refreshMs, peer.unchecked);
    const largest = Math.max(...sizes);
    if (split.largestForced) {
      const due = largestDue(largest, peer.capacity, budget, now - peer.largestAt, peer.evidence, peer.largestMisses);
      if (due.due) return { bytes: largest, steady: true, ...(due.early ? { early: peer.capacity } : {}) };
      if (split.evidenceSize !== undefined && evidenceDue(split.evidenceSize, peer.capacity, budget, now - peer.evidenceAt)) return { bytes: split.evidenceSize, steady: true };
    }
    const ok = affordableSizes(sizes, peer.capacity, split.fraction, refreshMs);
    return { bytes: ok[Math.floor(Math.random() * ok.length)]!, steady: true };
  }

  /**
   * Round-robin over peers with pending probes, so every peer gets its first fit early. With
   * none ready but some held by their pair lock: the time to ask again.
   */
  private next(): { peer: Peer; job: Job } | { retryAt: number } | undefined {
    const now = Date.now();
    const waiting = [...this.peers.values()].filter((p) => p.pending.length > 0);
    const list = waiting.filter((p) => p.heldUntil <= now);
    if (list.length === 0) return waiting.length ? { retryAt: Math.min(...waiting.map((p) => p.heldUntil)) } : undefined;
    const peer = list[this.turn++ % list.length]!;
    return { peer, job: peer.pending.shift()! };
  }

  /** Sleep until woken (new peers, a due refresh) or, if given, until `at`. */
  private async idle(at?: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      if (at !== undefined) timer = setTimeout(resolve, Math.max(0, at - Date.now()));
    });
    clearTimeout(timer);
    this.wake = undefined;
  }

  /** After a probe: the budget decides when the next steady probe to that peer may start. */
  private pace(peer: Peer, job: Job, seconds: number, start: number): void {
    const end = Date.now();
    peer.capacity = budgetCapacity(peer.fitBandwidth, job.bytes, seconds);
    const maxSize = Math.max(...this.opts.sizes);
    const largest = job.bytes === maxSize;
    if (largest) peer.largestAt = end;
    if (largest && job.steady) peer.unchecked = false;
    if (isEvidenceSize(job.bytes, maxSize)) peer.evidenceAt = end;
    if (job.early !== undefined) peer.largestMisses = largestMisses(peer.largestMisses, job.bytes, seconds, job.early);
    const split = budgetSplit(this.opts.sizes, peer.capacity, this.opts.budget, this.opts.refreshMs, peer.unchecked);
    // A forced largest probe, or an evidence probe, is paid for by its own schedule (largestDue, evidenceDue), not by a pause.
    const own = (largest && split.largestForced) || job.bytes === split.evidenceSize;
    const pause = own ? 0 : budgetPauseMs(job.bytes, seconds, peer.capacity, split.fraction);
    peer.nextAt = Math.max(start + this.opts.refreshMs, end + pause);
    if (!job.steady) return;
    const t = this.stats.steady.get(peer.reg.node) ?? { bytes: 0, probes: 0, firstAt: start, lastAt: end, capacity: peer.capacity };
    t.bytes += job.bytes;
    t.probes++;
    t.lastAt = end;
    t.capacity = peer.capacity;
    this.stats.steady.set(peer.reg.node, t);
  }

  /**
   * How long the pair lock may stand for a probe: three times its expected transfer (at least a
   * second), else the probe timeout. A probe stalled by a cut link then blocks the peer's probes
   * for about a second, not a whole timeout, so the cut is seen from both ends quickly.
   */
  private lockTtlMs(peer: Peer, bytes: number): number {
    const ceiling = this.opts.timeoutMs + 1000;
    const rate = peer.fitBandwidth ?? peer.capacity;
    return rate ? Math.min(ceiling, Math.max(1000, (3000 * bytes) / rate)) : ceiling;
  }

  /** A change was detected: probe the sizes the new regime can carry quickly, largest first. */
  private reprobe(peer: Peer, sample: LinkSample): void {
    peer.unchecked = true; // a new regime: its fit is the re-probes', not yet checked by a steady largest probe
    const rate = sample.bytes / sample.seconds;
    // A fit of the new regime needs two sizes: the two smallest at least, however slow the link
    // now looks (a timed-out probe's rate is only a bound, and may afford none).
    const smallest = [...this.opts.sizes].sort((a, b) => a - b).slice(0, 2);
    const sizes = [...new Set([...this.opts.sizes.filter((s) => (s / rate) * 1000 <= this.opts.reprobeMaxMs), ...smallest])].sort((a, b) => b - a);
    const queued = new Set(peer.pending.map((j) => j.bytes));
    for (const bytes of sizes) if (!queued.has(bytes)) peer.pending.push({ bytes, steady: false });
  }

  private async run(): Promise<void> {
    while (this.running) {
      const job = this.next();
      if (!job || 'retryAt' in job) {
        await this.idle(job?.retryAt);
        continue;
      }
      const { peer } = job;
      const { reg } = peer;
      const { bytes } = job.job;
      const pairKey = this.keys.pairProbe(this.node, reg.node);
      const owner = `${this.node}:${process.pid}`;
      if (!(await lockPair(this.redis, pairKey, owner, this.lockTtlMs(peer, bytes)))) {
        peer.pending.unshift(job.job);
        peer.heldUntil = Date.now() + HELD_RETRY_MS;
        continue;
      }
      const start = Date.now();
      try {
        const seconds = await probe(reg.host, reg.port, bytes, this.opts.timeoutMs, this.abort.signal).finally(async () => {
          await unlockPair(this.redis, pairKey, owner);
          peer.heldUntil = Date.now() + PAIR_GAP_MS;
        });
        this.stats.probes++;
        this.stats.bytes += bytes;
        if (!this.running) break;
        this.pace(peer, job.job, seconds, start);
        // Stamped with the probe's end, which lies inside the pair's lock.
        await this.record(peer, { bytes, seconds, at: start + Math.round(seconds * 1000) });
      } catch (e) {
        this.stats.failures++;
        // An early largest probe that failed found no faster link: a miss (budget.ts).
        if (job.job.early !== undefined) peer.largestMisses++;
        if (this.running && this.peers.has(reg.node)) {
          this.log(`probe to ${reg.node} (${bytes} B) failed: ${(e as Error).message}`);
          if (e instanceof ProbeTimeoutError) {
            await this.record(peer, { bytes, seconds: e.afterSec, at: Date.now(), censored: true }).catch(() => undefined);
          }
          // Try that size again later (bounded), so a hiccup cannot leave a link without a fit.
          if (peer.retries < MAX_RETRIES) {
            peer.retries++;
            peer.pending.push({ bytes, steady: false });
          }
        }
      }
    }
  }

  /** Store a probe's sample (if any) and fit the link again from its probes and transfers. */
  private record(p: Peer, sample?: LinkSample): Promise<void> {
    const run = this.fitting.then(() => this.refit(p, sample));
    this.fitting = run.catch(() => undefined);
    return run;
  }

  private async refit(p: Peer, sample?: LinkSample): Promise<void> {
    const peer = p.reg.node;
    const listKey = this.keys.linkSamples(this.node, peer);
    const transfersKey = this.keys.linkTransfers(this.node, peer);
    const m = this.redis.multi();
    if (sample) m.lpush(listKey, JSON.stringify(sample)).ltrim(listKey, 0, this.opts.maxSamples - 1);
    const res = await m.lrange(listKey, 0, -1).lrange(transfersKey, 0, -1).exec();
    const n = res?.length ?? 0;
    const probes = parseList(res?.[n - 2]?.[1]);
    const transfers = parseList(res?.[n - 1]?.[1]).map((t) => ({ ...t, transfer: true }));
    p.transfersSeen = Math.max(p.transfersSeen, ...transfers.map((t) => t.at));
    const samples = [...probes, ...transfers];
    const win = linkWindow(samples, { now: Date.now(), maxAgeMs: this.opts.maxAgeMs });
    const newest = win.samples[0];
    if (win.changeAt !== undefined && newest) {
      // Cut the stored lists at the change: a restart or another reader must not bring the old
      // regime back. Only this agent writes the probe list; the transfer list is newest first,
      // so keeping its head keeps the transfers of the new regime (a transfer recorded meanwhile
      // may push the oldest of them out: one sample).
      this.stats.changes++;
      // A new regime: whatever the early largest probes found of the old one no longer holds.
      p.largestMisses = 0;
      this.log(`link to ${peer} changed (${win.direction}): fitting the ${win.samples.length} newest samples only`);
      const keptProbes = win.samples.filter((s) => !s.transfer);
      const keptTransfers = win.samples.length - keptProbes.length;
      const cut = this.redis.multi().del(listKey);
      if (keptProbes.length) cut.rpush(listKey, ...keptProbes.map((s) => JSON.stringify(s)));
      if (keptTransfers) cut.ltrim(transfersKey, 0, keptTransfers - 1);
      else cut.del(transfersKey);
      await cut.exec();
      this.reprobe(p, newest);
      this.wake?.();
    } else if (win.suspect && newest) {
      // A lone deviating sample: probe again at once (ahead of anything queued). A transfer's size
      // is no probe size, and the next transfer is on its way: a smallest probe adds a second size.
      const bytes = newest.transfer ? Math.min(...this.opts.sizes) : newest.bytes;
      if (p.pending[0]?.bytes !== bytes) {
        p.pending.unshift({ bytes, steady: false });
        this.wake?.();
      }
    }
    p.evidence = staleEvidence(win.samples, Math.max(...this.opts.sizes));
    const fit = fitLink(win.samples);
    const sizes = new Set(win.samples.map((s) => s.bytes)).size;
    // The first fit waits for three sizes (bootstrap spans them at once); after a change, two do.
    const needed = win.samples.length < samples.length ? 2 : Math.min(3, this.opts.sizes.length);
    if (!fit || sizes < needed) return;
    p.fitBandwidth = fit.bandwidthBytesPerSec;
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
      sampledAt: Math.max(...win.samples.map((s) => s.at)),
      windowFrom: Math.min(...win.samples.map((s) => s.at)),
    };
    await this.redis.set(this.keys.linkFit(this.node, peer), JSON.stringify(profile));
  }
}

function parseSample(raw: unknown): LinkSample | undefined {
  if (typeof raw !== 'string') return undefined;
  try {
    const s = JSON.parse(raw) as LinkSample;
    return typeof s.bytes === 'number' && typeof s.seconds === 'number' && typeof s.at === 'number' ? s : undefined;
  } catch {
    return undefined; // a foreign or truncated entry: ignore it
  }
}

function parseList(raw: unknown): LinkSample[] {
  return Array.isArray(raw) ? raw.map(parseSample).filter((s): s is LinkSample => s !== undefined) : [];
}
