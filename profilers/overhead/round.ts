// One overhead probe round's connections and what it made in Redis (prober.ts), so a round that
// cannot finish can be abandoned. The probes' connections never give up a command (BullMQ's
// advice, as the runners'), so with the deployment's Redis gone mid-probe a round waited forever:
// no later round ran and the agent could not stop. Abandoning drops the round's connections, so
// every command waiting on them fails and the probes unwind through their own clean-up (runners
// and Python workers closed, scratch folders removed); the waits on connections BullMQ opened
// itself (a worker's blocking one) are ended by `guard`. What the round made in Redis stays listed
// until it is removed: by the round itself, or else by the next round (or the prober's stop) once
// Redis answers again.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis, RedisOptions } from 'ioredis';
import { endConnection } from '../../circe/queue/connection.js';

/** Removes the keys of one thing a probe made (its queue, its scratch app). */
export type KeyCleanup = (redis: Redis) => Promise<unknown>;

export class ProbeRound {
  private readonly conns = new Set<Redis>();
  private readonly quits = new Set<() => void>();
  private gone = false;
  private endNow!: () => void;
  /** Resolves when the round is abandoned. */
  readonly ended = new Promise<void>((r) => (this.endNow = r));

  /** `leftovers`: the removals not done yet, shared from round to round. */
  constructor(readonly leftovers: Map<string, KeyCleanup> = new Map()) {}

  get abandoned(): boolean {
    return this.gone;
  }

  /** A connection of the round's own (a duplicate of `base`), dropped if the round is abandoned. */
  connect(base: Redis, opts: { maxRetriesPerRequest?: number | null } = {}): Redis {
    const retry = base.options.retryStrategy;
    // Reconnecting as `base` does, until the round is abandoned (see abandon()).
    const o: Partial<RedisOptions> = { ...opts, retryStrategy: (times: number) => (this.gone ? null : retry?.(times)) };
    const c = base.duplicate(o) as Redis;
    c.on('error', () => undefined); // reconnects are expected; the round reports its failure
    this.conns.add(c);
    if (this.gone) c.disconnect(); // not yet reconnecting: ends it
    return c;
  }

  /** Done with a connection. It stays the round's until ended: a QUIT can wait on a Redis gone meanwhile. */
  async release(c: Redis): Promise<void> {
    // Abandoned: abandon() has dropped it already, and a second disconnect while it reconnects
    // would only clear its retry timer, leaving what waits on it (a late runner start) waiting.
    if (this.gone) return;
    await endConnection(c);
    this.conns.delete(c);
  }

  /** `p`, or a rejection as soon as the round is abandoned. */
  guard<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const quit = (): void => reject(new Error('probe round abandoned'));
      if (this.gone) return quit();
      this.quits.add(quit);
      p.then(resolve, reject).finally(() => this.quits.delete(quit));
    });
  }

  /**
   * guard() for something to be closed (a probe's runner): one that becomes ready only after the
   * round was abandoned is closed then, and `after` runs (to remove what its start made). Two CI
   * runs kept a task probe's scratch folder whose runner had not got as far as its work folders:
   * the probe's clean-up waited for a start that had not ended (what it waited on was not found).
   */
  async opened<T extends { close(): Promise<unknown> }>(p: Promise<T>, after: () => Promise<unknown> = async () => undefined): Promise<T> {
    try {
      return await this.guard(p);
    } catch (e) {
      void p.then(async (late) => {
        await late.close().catch(() => undefined);
        await after().catch(() => undefined);
      }, () => undefined);
      throw e;
    }
  }

  /**
   * Wait for a close; once the round is abandoned, for at most `ms` more, so that what follows
   * (removing the scratch folder) happens even if the close never ends. It goes on meanwhile.
   */
  closing(p: Promise<unknown>, ms = 5000): Promise<unknown> {
    return Promise.race([p.catch(() => undefined), this.ended.then(() => sleep(ms, undefined, { ref: false }))]);
  }

  /** Throws once the round is abandoned: between probes, so an abandoned round starts nothing more. */
  check(): void {
    if (this.gone) throw new Error('probe round abandoned');
  }

  /** The probe made something in Redis that `cleanup` removes. */
  made(label: string, cleanup: KeyCleanup): void {
    this.leftovers.set(label, cleanup);
  }

  /** Remove what `label` names now; when that fails (Redis away), it stays for later. */
  async clean(redis: Redis, label: string): Promise<void> {
    const cleanup = this.leftovers.get(label);
    if (!cleanup || this.gone) return;
    try {
      await cleanup(redis);
      this.leftovers.delete(label);
    } catch {
      // still listed: the next round (or the prober's stop) tries again
    }
  }

  /** Remove what earlier rounds could not. */
  async cleanLeftovers(redis: Redis): Promise<void> {
    for (const label of [...this.leftovers.keys()]) await this.clean(redis, label);
  }

  /** Drop the round's connections and end its guarded waits; the probes then unwind. */
  abandon(): void {
    if (this.gone) return;
    this.gone = true;
    this.endNow();
    for (const c of this.conns) {
      // ioredis' disconnect() while waiting to reconnect only clears the retry timer: the connection
      // never ends and the commands queued on it wait for ever. There the retry strategy ends it at
      // its next attempt (within 2 s), or, Redis being back, it is dropped once up.
      if (c.status === 'reconnecting') c.once('connect', () => c.disconnect());
      else c.disconnect();
    }
    for (const q of this.quits) q();
    this.quits.clear();
  }
}
