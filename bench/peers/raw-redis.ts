// The floor for moving large items through a 3-stage chain on Redis: per item the source SETs
// the bytes, each stage GETs its input and SETs its output, and the sink GETs the result (the
// same 4 SETs and 4 GETs of the item's bytes that Jupiter's source, runners and sink make), on
// one connection per stage, with up to 4 items in flight (one per stage, as a pipeline has).
import { Redis } from 'ioredis';
import { nowMs } from '../../circe/index.js';

export class RawRedisChain {
  private readonly conns: Redis[];
  private next = 0;

  constructor(url: string, private readonly payload: Buffer) {
    this.conns = Array.from({ length: 5 }, () => new Redis(url, { maxRetriesPerRequest: null }));
  }

  private async one(): Promise<void> {
    const id = `rawredis:${this.next++}`;
    const [source, s1, s2, s3, sink] = this.conns;
    await source!.set(`${id}:0`, this.payload);
    for (const [i, c] of [s1!, s2!, s3!].entries()) {
      const bytes = await c.getBuffer(`${id}:${i}`);
      await c.set(`${id}:${i + 1}`, bytes!);
    }
    const out = await sink!.getBuffer(`${id}:3`);
    if (out?.length !== this.payload.length) throw new Error('raw Redis chain lost bytes');
    await sink!.del(`${id}:0`, `${id}:1`, `${id}:2`, `${id}:3`);
  }

  /** Items/s with up to 4 items in flight. */
  async throughput(n: number): Promise<number> {
    const t0 = performance.now();
    let started = 0;
    const lane = async (): Promise<void> => {
      while (started < n) {
        started++;
        await this.one();
      }
    };
    await Promise.all([lane(), lane(), lane(), lane()]);
    return n / ((performance.now() - t0) / 1000);
  }

  /** End-to-end ms of n items sent one at a time. */
  async closedLoop(n: number): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = nowMs();
      await this.one();
      out.push(nowMs() - t0);
    }
    return out;
  }

  async stop(): Promise<void> {
    await Promise.all(this.conns.map((c) => c.quit().catch(() => undefined)));
  }
}
