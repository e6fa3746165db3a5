import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys } from '../../circe/queue/keys.js';
import { DoneWaiter } from '../../circe/home/wait.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

const PREFIX = 'dw:';

/**
 * Finish an item the way the sink's scripts do, as far as a waiter sees it: its record, its
 * delivered set and an item-done event on the finished stream. Returns when Redis has them.
 */
async function finish(redis: Redis, app: string, item: string, opts: { failed?: boolean; outputs?: string[] } = {}): Promise<void> {
  const k = appKeys(PREFIX, app);
  const outputs = opts.outputs ?? [`${item}.out`];
  const pipe = redis.pipeline().hset(k.item(item), 'enteredAt', 1, 'doneAt', 2, 'makespanMs', 7, ...(opts.failed ? ['failed', '1', 'error', 'boom'] : []));
  if (!opts.failed) pipe.sadd(k.out(item), ...outputs);
  const ev = { type: 'item-done', app, item, makespanMs: 7, outputs: opts.failed ? [] : outputs, ...(opts.failed ? { failed: true } : {}), ts: Date.now() };
  pipe.xadd(k.finished, '*', 'json', JSON.stringify(ev));
  await pipe.exec();
}

/** HMGETs Redis has run so far: a waiter's look at item records makes one per item. */
async function looksSoFar(redis: Redis): Promise<number> {
  const stats = (await redis.info('commandstats')).split('\n');
  const calls = (name: string): number => Number(/calls=(\d+)/.exec(stats.find((l) => l.startsWith(`cmdstat_${name}:`)) ?? '')?.[1] ?? 0);
  return calls('hmget');
}

describe('DoneWaiter (circe/home/wait.ts, real Redis)', function () {
  this.timeout(20_000);
  let redis: TestRedis;
  let client: Redis;
  let n = 0;
  let app: string;
  let waiter: DoneWaiter;

  before(async () => {
    redis = await startTestRedis();
    client = connectRedis(redis.url);
  });
  after(async () => {
    client.disconnect();
    await redis.stop();
  });
  beforeEach(() => {
    app = `w${n++}`;
    waiter = new DoneWaiter(client, PREFIX, app);
  });
  afterEach(() => waiter.close());

  it('finds an item finished before the wait began by a look at its record', async () => {
    await finish(client, app, 'a');
    const [r] = await waiter.wait(['a'], { timeoutMs: 5000 });
    expect(r).to.include({ item: 'a', done: true, failed: false, makespanMs: 7 });
    expect(r!.outputs).to.deep.equal(['a.out']);
  });

  it('an item given as submitted after ready() is waited for without a look at its record', async () => {
    await waiter.ready();
    const looks = await looksSoFar(client);
    const waiting = waiter.wait([{ item: 'b', enteredAt: Date.now() }], { timeoutMs: 5000 });
    setTimeout(() => void finish(client, app, 'b'), 50);
    const [r] = await waiting;
    expect(r).to.include({ item: 'b', done: true, failed: false });
    expect(await looksSoFar(client), 'no HMGET of item records').to.equal(looks);
  });

  it('keeps items finished while it waited for others, for a later wait that skips the look', async () => {
    await waiter.ready();
    const enteredAt = Date.now();
    await finish(client, app, 'c2', { outputs: ['x'] });
    await finish(client, app, 'c1');
    // c2's event is read (and passed over) while waiting for c1.
    await waiter.wait([{ item: 'c1', enteredAt }], { timeoutMs: 5000 });
    const looks = await looksSoFar(client);
    const t0 = Date.now();
    const [r] = await waiter.wait([{ item: 'c2', enteredAt }], { timeoutMs: 5000, pollMs: 3000 });
    expect(Date.now() - t0, 'answered from what it kept, not by the periodic look').to.be.below(1000);
    expect(r).to.include({ item: 'c2', done: true });
    expect(r!.outputs).to.deep.equal(['x']);
    expect(await looksSoFar(client)).to.equal(looks);
  });

  it('a failed item kept from an earlier wait gets its error from its record', async () => {
    await waiter.ready();
    const enteredAt = Date.now();
    await finish(client, app, 'd2', { failed: true });
    await finish(client, app, 'd1');
    await waiter.wait([{ item: 'd1', enteredAt }], { timeoutMs: 5000 });
    const [r] = await waiter.wait([{ item: 'd2', enteredAt }], { timeoutMs: 5000 });
    expect(r).to.include({ item: 'd2', done: true, failed: true, error: 'boom' });
  });

  it('an item entered before ready() (another clock, or submitted earlier) is looked at: nothing is missed', async () => {
    await finish(client, app, 'e');
    const [r] = await waiter.wait([{ item: 'e', enteredAt: 1 }], { timeoutMs: 5000 });
    expect(r).to.include({ item: 'e', done: true });
  });
});
