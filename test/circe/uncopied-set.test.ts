// uncopiedSet relies on how ioredis writes a command (circe/queue/uncopied-set.ts): these checks
// hold it to that on a real Redis, for a client that is connected, one still connecting (the
// offline queue), one whose Redis comes back after a kill (resent commands), and alongside
// pipelines and ordinary commands on the same connection.
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { UNCOPIED_MIN_BYTES, uncopiedSet } from '../../circe/queue/uncopied-set.js';

describe('circe: large SETs handed to the socket uncopied', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  const clients: Redis[] = [];
  const client = (opts: Record<string, unknown> = {}): Redis => {
    const c = new Redis(redis.url, { maxRetriesPerRequest: null, ...opts });
    c.on('error', () => undefined); // while the Redis of the last check is away
    clients.push(c);
    return c;
  };
  before(async () => {
    redis = await startTestRedis();
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await redis.stop();
  });

  it('stores every byte of large and small values, with and without a TTL', async () => {
    const c = client();
    const big = randomBytes(3 * 1024 * 1024 + 7);
    const small = randomBytes(UNCOPIED_MIN_BYTES - 1);
    expect(await uncopiedSet(c, 'big', big)).to.equal('OK');
    expect(await uncopiedSet(c, 'small', small, 60)).to.equal('OK');
    expect(await uncopiedSet(c, 'bigttl', big, 60)).to.equal('OK');
    expect((await c.getBuffer('big'))!.equals(big)).to.equal(true);
    expect((await c.getBuffer('small'))!.equals(small)).to.equal(true);
    expect((await c.getBuffer('bigttl'))!.equals(big)).to.equal(true);
    expect(await c.ttl('big')).to.equal(-1);
    expect(await c.ttl('bigttl')).to.be.within(1, 60);
    expect(await uncopiedSet(c, 'empty', Buffer.alloc(0))).to.equal('OK');
    expect(await c.strlen('empty')).to.equal(0);
  });

  it('keeps order with ordinary commands and pipelines on one connection', async () => {
    const c = client();
    const values = Array.from({ length: 12 }, (_, i) => randomBytes(256 * 1024 + i));
    const done = await Promise.all(values.flatMap((v, i) => [
      uncopiedSet(c, `v${i}`, v),
      c.rpush('order', String(i)),
      c.pipeline().incr('n').set(`p${i}`, 'x').exec(),
    ]));
    expect(done.filter((r) => r === 'OK')).to.have.length(values.length);
    expect(await c.lrange('order', 0, -1)).to.deep.equal(values.map((_, i) => String(i)));
    expect(await c.get('n')).to.equal(String(values.length));
    for (const [i, v] of values.entries()) expect((await c.getBuffer(`v${i}`))!.equals(v), `v${i}`).to.equal(true);
  });

  it('works from the offline queue of a client that is still connecting', async () => {
    const c = client({ lazyConnect: true });
    const v = randomBytes(1024 * 1024);
    const sets = [uncopiedSet(c, 'q1', v), c.set('q2', 'small'), uncopiedSet(c, 'q3', v, 30)];
    expect(c.status).to.not.equal('ready'); // the sends started its connection; they wait in the offline queue
    expect(await Promise.all(sets)).to.deep.equal(['OK', 'OK', 'OK']);
    expect((await c.getBuffer('q1'))!.equals(v)).to.equal(true);
    expect((await c.getBuffer('q3'))!.equals(v)).to.equal(true);
  });

  it('a SET sent while Redis is away arrives whole once it is back', async () => {
    const c = client({ retryStrategy: () => 100 });
    await c.ping();
    await redis.kill();
    const v = randomBytes(2 * 1024 * 1024);
    const set = uncopiedSet(c, 'after', v);
    await new Promise((r) => setTimeout(r, 300));
    await redis.restart();
    expect(await set).to.equal('OK');
    expect((await c.getBuffer('after'))!.equals(v)).to.equal(true);
  });
});
