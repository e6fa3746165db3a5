// Whether a BullMQ consumer (a task runner, the sink) has a backlog: jobs coming back to back.
// A worker allowed several jobs looks for the next one before it starts the first (BullMQ's
// main loop fetches in sequence up to its concurrency), which costs an isolated item a round
// trip; so a consumer holds one job at a time while the stream is quiet and opens its window
// only while jobs come back to back, closing it again once it goes idle.

/** A job that comes within this long of the previous one's end means the queue has a backlog. */
export const BACKLOG_GAP_MS = 2;
/** Idle this long: the window closes. */
export const IDLE_MS = 50;

export class Backlog {
  private inHand = 0;
  private freeAt = -Infinity;
  private idleTimer?: NodeJS.Timeout;
  /** Jobs come back to back. */
  active = false;

  /** @param changed called when `active` changes (resize the worker's concurrency there). */
  constructor(private readonly changed: () => void) {}

  /** A job came in. */
  enter(): void {
    this.inHand++;
    clearTimeout(this.idleTimer);
    if (this.inHand === 1 && !this.active && performance.now() - this.freeAt < BACKLOG_GAP_MS) {
      this.active = true;
      this.changed();
    }
  }

  /** A job is finished. */
  leave(): void {
    if (--this.inHand > 0) return;
    this.freeAt = performance.now();
    this.idleTimer = setTimeout(() => {
      this.active = false;
      this.changed();
    }, IDLE_MS);
    this.idleTimer.unref();
  }

  stop(): void {
    clearTimeout(this.idleTimer);
  }
}
