// A closed-loop stream of items through a deployed app for the adapt benches: `window` items in
// flight all the time, what finished and when, and the timeline in bins (items/s, makespan p50).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { DEFAULT_PREFIX } from '../../config/redis-keys.js';
import type { AppSpec } from '../../config/types.js';
import { submitItems } from '../../circe/home/source.js';
import { itemResults } from '../../circe/home/wait.js';
import { median, sleep } from '../cli.js';

export const BIN_SEC = 5;

export interface Done {
  /** Seconds since the stream started. */
  t: number;
  makespanMs: number;
}

/** The input file of the i-th item: its name (under the stream's folder) and content. */
export type ItemMaker = (i: number) => { name: string; content: string };

/** A camera trigger (apps/camera): one frame each. */
export const cameraTrigger: ItemMaker = (i) => ({ name: `s${String(i).padStart(5, '0')}.trigger`, content: `${JSON.stringify({ camera: 'cam0', frame: i, seed: 7 })}\n` });

/** Items through the app, `window` in flight, until stop() says so; what finished, when. */
export class Stream {
  readonly done: Done[] = [];
  readonly sent: string[] = [];
  failed = 0;
  private stopping = false;
  private frame = 0;
  private readonly t0 = Date.now();
  private running?: Promise<void>;

  constructor(private readonly redis: Redis, private readonly app: AppSpec, private readonly runId: string, private readonly dir: string, private readonly window: number, private readonly make: ItemMaker = cameraTrigger) {
    mkdirSync(dir, { recursive: true });
  }

  get elapsed(): number {
    return (Date.now() - this.t0) / 1000;
  }

  start(): this {
    this.running = this.loop();
    return this;
  }

  private next(): string {
    const { name, content } = this.make(this.frame++);
    const f = join(this.dir, name);
    writeFileSync(f, content);
    return f;
  }

  private async loop(): Promise<void> {
    const inflight = new Set<string>();
    while (!this.stopping || inflight.size > 0) {
      if (!this.stopping && inflight.size < this.window) {
        const files = Array.from({ length: this.window - inflight.size }, () => this.next());
        for (const it of await submitItems(this.redis, DEFAULT_PREFIX, this.app, files, { runId: this.runId })) {
          inflight.add(it.item);
          this.sent.push(it.item);
        }
      }
      await sleep(50);
      for (const r of await itemResults(this.redis, DEFAULT_PREFIX, this.app.name, [...inflight])) {
        if (!r.done) continue;
        inflight.delete(r.item);
        if (r.failed) this.failed++;
        else this.done.push({ t: this.elapsed, makespanMs: r.makespanMs ?? NaN });
      }
    }
  }

  /** Stop submitting; resolves when the items in flight are through. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  rate(from: number, to: number): number {
    return this.done.filter((d) => d.t >= from && d.t < to).length / (to - from);
  }
}

export function bins(done: Done[], until: number): Array<{ t: number; itemsPerSec: number; makespanP50Ms: number }> {
  const out = [];
  for (let t = 0; t + BIN_SEC <= until + 1e-9; t += BIN_SEC) {
    const inBin = done.filter((d) => d.t >= t && d.t < t + BIN_SEC);
    out.push({ t: t + BIN_SEC, itemsPerSec: inBin.length / BIN_SEC, makespanP50Ms: median(inBin.map((d) => d.makespanMs)) });
  }
  return out;
}
