// Jobs a lost reply left locked to a worker that does not know it has them.
// When Redis goes away (a restart, a cut link) with a command in flight, ioredis sends the command
// again once it is back. A moveToFinished that Redis had run before it went away then fails
// ("Missing key for job …": the job is already done and removed), and the next job that the lost
// reply handed over stays active, locked with this worker's token, with no processor running it
// and nobody extending its lock. BullMQ's stalled check hands it out again only once that lock has
// expired and a check has seen it twice: 30-60 s with a 30-s lock (the testbed's "Redis restarted"
// stream took 46 s instead of 9). After each reconnect this watch looks for such jobs twice a few
// seconds apart and moves those still orphaned the second time back to waiting with their own
// token (no attempt counted). A job finishing just then may be moved too: it runs again, and the
// done markers keep its outputs once.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { Job, Queue } from './libs.js';

export interface OrphanWatchOptions {
  /** The worker's own connection: its reconnects are when replies can have been lost. */
  connection: Redis;
  queuePrefix: string;
  queue: string;
  /** The worker's id: its lock tokens are `<id>:<n>`. */
  workerId: string;
  /** Whether the worker's processor has this job (running it or waiting for a slot). */
  inHand: (jobId: string) => boolean;
  log?: (line: string) => void;
  /** After a reconnect, wait this long before the first look (the worker resumes meanwhile). */
  settleMs?: number;
  /** Between the two looks: a job fetched by the worker reaches its processor long before. */
  confirmMs?: number;
}

export class OrphanWatch {
  private readonly queue: Queue;
  private lost = false;
  private readonly stopping = new AbortController();
  private timer?: NodeJS.Timeout;
  private readonly onClose = (): void => {
    this.lost = true;
  };
  private readonly onReady = (): void => {
    if (!this.lost || this.stopping.signal.aborted) return;
    this.lost = false;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.sweep().catch(() => 0), this.opts.settleMs ?? 2000);
    this.timer.unref();
  };

  constructor(private readonly opts: OrphanWatchOptions) {
    this.queue = new Queue(opts.queue, { connection: opts.connection, prefix: opts.queuePrefix });
    this.queue.on('error', () => undefined);
    opts.connection.on('close', this.onClose);
    opts.connection.on('ready', this.onReady);
  }

  /** Active jobs locked with this worker's token that its processor does not have: id -> token. */
  private async orphans(): Promise<Map<string, string>> {
    const redis = this.opts.connection;
    const ids = await redis.lrange(this.queue.toKey('active'), 0, -1);
    const out = new Map<string, string>();
    if (ids.length === 0) return out;
    const locks = await redis.mget(ids.map((id) => `${this.queue.toKey(id)}:lock`));
    ids.forEach((id, i) => {
      const token = locks[i];
      if (token?.startsWith(`${this.opts.workerId}:`) && !this.opts.inHand(id)) out.set(id, token);
    });
    return out;
  }

  /** Look twice; move back to waiting what was orphaned both times (same token). Returns how many. */
  async sweep(): Promise<number> {
    const first = await this.orphans();
    if (first.size === 0) return 0;
    await sleep(this.opts.confirmMs ?? 3000, undefined, { signal: this.stopping.signal, ref: false }).catch(() => undefined);
    if (this.stopping.signal.aborted) return 0;
    const second = await this.orphans();
    let moved = 0;
    for (const [id, token] of second) {
      if (first.get(id) !== token) continue;
      const job = await Job.fromId(this.queue, id);
      // Finished or taken over meanwhile: nothing to do.
      if (await job?.moveToWait(token).then(() => true, () => false)) moved++;
    }
    if (moved > 0) this.opts.log?.(`${this.opts.queue}: ${moved} job(s) a lost Redis reply had left locked to this runner went back to waiting`);
    return moved;
  }

  /** A sweep under way ends at its next step (not awaited: with Redis away it would wait for it). */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    this.opts.connection.off('close', this.onClose);
    this.opts.connection.off('ready', this.onReady);
    await this.queue.close().catch(() => undefined);
  }
}
