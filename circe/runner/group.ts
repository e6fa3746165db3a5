// Small concurrency tools of the task runner. The runner holds several jobs at once so that
// their Redis round trips overlap and share calls; these keep that safe and in order.

interface Waiting<T, R> {
  value: T;
  resolve(r: R): void;
  reject(e: unknown): void;
}

/**
 * Group commit: the first call goes out at once (no added latency when the stream is quiet);
 * calls made while one is in flight are sent together as the next one, in call order. So a
 * busy runner needs one round trip per group instead of one per item.
 */
export class Grouper<T, R> {
  private queue: Array<Waiting<T, R>> = [];
  private busy = false;

  /**
   * @param send sends one group and returns one result per value, in order
   * @param maxItems most values per group
   * @param weight of a value (bytes); a group stops growing past maxWeight (it always takes one)
   */
  constructor(
    private readonly send: (values: T[]) => Promise<R[]>,
    private readonly maxItems: number,
    private readonly weight: (v: T) => number = () => 0,
    private readonly maxWeight = Infinity,
  ) {}

  push(value: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ value, resolve, reject });
      if (!this.busy) {
        // Sent right now: an idle stream pays no extra event-loop turn.
        this.busy = true;
        void this.drain();
      }
    });
  }

  private take(): Array<Waiting<T, R>> {
    let n = 0;
    let w = 0;
    while (n < this.queue.length && n < this.maxItems) {
      const vw = this.weight(this.queue[n]!.value);
      if (n > 0 && w + vw > this.maxWeight) break;
      w += vw;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const group = this.take();
      try {
        const res = await this.send(group.map((g) => g.value));
        group.forEach((g, i) => g.resolve(res[i]!));
      } catch (e) {
        for (const g of group) g.reject(e);
      }
    }
    this.busy = false;
  }
}

/** A first-in first-out counting semaphore: waiters are served strictly in arrival order. */
export class FifoGate {
  private used = 0;
  private readonly waiting: Array<{ n: number; go(): void }> = [];

  /** @param capacity total units; a request larger than the capacity runs alone. */
  constructor(private readonly capacity: number) {}

  private fits(n: number): boolean {
    return this.used === 0 || this.used + n <= this.capacity;
  }

  async take(n = 1): Promise<void> {
    if (this.waiting.length === 0 && this.fits(n)) {
      this.used += n;
      return;
    }
    await new Promise<void>((go) => this.waiting.push({ n, go }));
  }

  give(n = 1): void {
    this.used -= n;
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.n)) {
      const w = this.waiting.shift()!;
      this.used += w.n;
      w.go();
    }
  }
}
