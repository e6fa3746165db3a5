// Per-app running statistics computed from the event stream: what jupiter/<app>/stats carries.
// Queue depths come from events, so they need no knowledge of how the runners queue their work:
// each task keeps the items it holds, keyed by item id, as waiting (entered, or failed and
// retried) or running (started). Keying by item matters: a join task gets one `enter` per
// arriving input but one `start`, and a retried attempt may fail without a `start` of its own,
// so plain event counts (entered − started) would leave phantom waiting items behind.
import type { AppEvent } from '../../config/events.js';
import type { StatsMessage, TaskStats } from './topics.js';

interface TaskCounts {
  entered: number;
  started: number;
  processed: number;
  failed: number;
  failedAttempts: number;
  retried: number;
  durationSumMs: number;
  node: string | null;
  /** Items this task holds now: item id -> where it is. */
  holding: Map<string, 'waiting' | 'running'>;
}

const MAKESPAN_SAMPLES = 1000;

/** q-quantile (0..1) of ascending-sorted values, nearest-rank. */
export function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

export class AppStats {
  private readonly tasks = new Map<string, TaskCounts>();
  private itemsDone = 0;
  private itemsFailed = 0;
  /** Completion times (ms) of recent items, for throughput. */
  private doneTimes: number[] = [];
  /** Makespans (ms) of the last MAKESPAN_SAMPLES items. */
  private makespans: number[] = [];
  private lastMakespanMs: number | null = null;

  constructor(readonly app: string, private readonly windowSec = 30) {}

  /** Make tasks known before their first event (so they show with zero counts). */
  declareTasks(names: string[]): void {
    for (const n of names) this.task(n);
  }

  private task(name: string): TaskCounts {
    let t = this.tasks.get(name);
    if (!t) {
      t = { entered: 0, started: 0, processed: 0, failed: 0, failedAttempts: 0, retried: 0, durationSumMs: 0, node: null, holding: new Map() };
      this.tasks.set(name, t);
    }
    return t;
  }

  add(ev: AppEvent): void {
    if (ev.type === 'item-done') {
      this.itemsDone += 1;
      this.doneTimes.push(ev.ts);
      this.makespans.push(ev.makespanMs);
      if (this.makespans.length > MAKESPAN_SAMPLES) this.makespans.splice(0, this.makespans.length - MAKESPAN_SAMPLES);
      this.lastMakespanMs = ev.makespanMs;
      // A finished item (done, or given up) waits nowhere any more, e.g. in a join whose other
      // branch failed.
      for (const t of this.tasks.values()) t.holding.delete(ev.item);
      return;
    }
    const t = this.task(ev.task);
    t.node = ev.node;
    switch (ev.type) {
      case 'enter':
        t.entered += 1;
        // Another input of an item already started (a late join input) changes nothing.
        if (!t.holding.has(ev.item)) t.holding.set(ev.item, 'waiting');
        break;
      case 'start':
        t.started += 1;
        t.holding.set(ev.item, 'running');
        break;
      case 'finish':
        t.processed += 1;
        t.durationSumMs += ev.durationMs ?? 0;
        t.holding.delete(ev.item);
        break;
      case 'fail':
        t.failedAttempts += 1;
        // A failure without `final: false` gives the item up; otherwise it goes back to the queue.
        if (ev.final === false) {
          t.retried += 1;
          t.holding.set(ev.item, 'waiting');
        } else {
          t.failed += 1;
          this.itemsFailed += 1;
          t.holding.delete(ev.item);
        }
        break;
    }
  }

  snapshot(now = Date.now()): StatsMessage {
    const from = now - this.windowSec * 1000;
    let cut = 0;
    while (cut < this.doneTimes.length && this.doneTimes[cut]! < from) cut += 1;
    if (cut > 0) this.doneTimes = this.doneTimes.slice(cut);
    const inWindow = this.doneTimes.filter((ts) => ts <= now).length;
    const sorted = [...this.makespans].sort((a, b) => a - b);
    const sec = (ms: number | null): number | null => (ms === null ? null : ms / 1000);
    const tasks: Record<string, TaskStats> = {};
    let queued = 0;
    let running = 0;
    for (const [name, t] of this.tasks) {
      let waiting = 0;
      for (const where of t.holding.values()) if (where === 'waiting') waiting += 1;
      const run = t.holding.size - waiting;
      queued += waiting;
      running += run;
      tasks[name] = {
        entered: t.entered,
        started: t.started,
        processed: t.processed,
        failed: t.failed,
        failedAttempts: t.failedAttempts,
        waiting,
        running: run,
        meanDurationSec: t.processed > 0 ? t.durationSumMs / t.processed / 1000 : null,
        node: t.node,
      };
    }
    return {
      app: this.app,
      ts: now,
      windowSec: this.windowSec,
      itemsDone: this.itemsDone,
      itemsFailed: this.itemsFailed,
      throughput: inWindow / this.windowSec,
      makespanP50Sec: sec(quantile(sorted, 0.5)),
      makespanP95Sec: sec(quantile(sorted, 0.95)),
      makespanLastSec: sec(this.lastMakespanMs),
      queued,
      running,
      tasks,
    };
  }
}
