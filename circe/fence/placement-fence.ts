// A runner that its task was moved away from stops by itself. When a node is cut off (its link to
// the home down, its engine out of reach), the hub's reconciler moves the node's tasks and starts
// their runners elsewhere, but cannot stop the old ones: they are out of reach too. Once the link
// is back they would go on taking jobs beside the new runners for good — harmless for the items
// (done markers and the sink's dedup), not for the placement: the bytes would cross links the
// mapper chose not to use, and `status` would show one node while two ran the task.
// The placement is a hash the orchestrator writes with every mapping record (deploy, repair,
// re-map): task -> node. The fence looks at its task's field every few seconds and fires when it
// changes from this runner's node to another one. Only a change counts: a runner a relocation
// starts finds the old node there until the relocation writes the new placement (after its runners
// started), and must not stop itself then.
import type { Redis } from 'ioredis';

export interface PlacementFenceOptions {
  redis: Redis;
  /** The app's placement hash (appKeys(...).placement). */
  key: string;
  task: string;
  /** This runner's node. */
  node: string;
  /** Called once, with the node the task is placed on now. */
  onMoved: (to: string) => void;
  /** Between looks, ms (default 5 s: a stale runner goes within seconds of its link coming back). */
  everyMs?: number;
}

export const FENCE_EVERY_MS = 5000;

export class PlacementFence {
  private timer?: NodeJS.Timeout;
  /** The placement last seen (undefined: none yet, or no answer). */
  private last?: string;
  private fired = false;

  private constructor(private readonly opts: PlacementFenceOptions) {}

  /** Start watching; the first look records where the task is placed now. */
  static start(opts: PlacementFenceOptions): PlacementFence {
    const f = new PlacementFence(opts);
    void f.look().finally(() => f.schedule());
    return f;
  }

  private schedule(): void {
    if (this.fired) return;
    this.timer = setTimeout(() => {
      void this.look().finally(() => this.schedule());
    }, this.opts.everyMs ?? FENCE_EVERY_MS);
    this.timer.unref();
  }

  private async look(): Promise<void> {
    const { redis, key, task, node } = this.opts;
    // A Redis that is away (the cut link itself) answers nothing: the next look asks again.
    const now = await redis.hget(key, task).catch(() => undefined);
    if (now === undefined || this.fired) return;
    const before = this.last;
    this.last = now ?? undefined;
    if (before === node && now !== null && now !== node) {
      this.fired = true;
      this.opts.onMoved(now);
    }
  }

  /** No more looks (a look waiting for a Redis that is away is left to end on its own). */
  stop(): void {
    this.fired = true;
    clearTimeout(this.timer);
  }
}
