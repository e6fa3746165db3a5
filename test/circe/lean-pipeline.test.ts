import { expect } from 'chai';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { pipeline } from '../../circe/queue/pipeline.js';
import { execOrThrow } from '../../circe/queue/transport.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

type Echo = { jEcho(k: string, v: string): Echo; jEchoBuffer(k: string, v: string): Echo; jLater(): Echo };

describe('lean pipelines (circe/queue/pipeline.ts, real Redis)', function () {
  this.timeout(20_000);
  let redis: TestRedis;
  let client: Redis;

  before(async () => {
    redis = await startTestRedis();
    client = connectRedis(redis.url);
    client.defineCommand('jEcho', { numberOfKeys: 1, lua: "redis.call('SET', KEYS[1], ARGV[1]) return ARGV[1]" });
  });
  after(async () => {
    client.disconnect();
    await redis.stop();
  });

  it('runs builtins and defined scripts in order, as redis.pipeline() does', async () => {
    const p = pipeline(client) as unknown as Echo & ReturnType<Redis['pipeline']>;
    p.set('lp:a', '1');
    p.jEcho('lp:b', 'two');
    p.jEchoBuffer('lp:c', 'three');
    p.mget('lp:a', 'lp:b', 'lp:c');
    const res = await execOrThrow(p);
    expect(res.slice(0, 2)).to.deep.equal(['OK', 'two']);
    expect(Buffer.isBuffer(res[2])).to.equal(true);
    expect(res[3]).to.deep.equal(['1', 'two', 'three']);
  });

  it('keeps working after Redis forgot the scripts (NOSCRIPT) and sees commands defined later', async () => {
    await client.script('FLUSH');
    const first = await execOrThrow((pipeline(client) as unknown as Echo).jEcho('lp:d', 'again') as unknown as ReturnType<Redis['pipeline']>);
    expect(first).to.deep.equal(['again']);
    client.defineCommand('jLater', { numberOfKeys: 0, lua: "return 'later'" });
    const later = await execOrThrow((pipeline(client) as unknown as Echo).jLater() as unknown as ReturnType<Redis['pipeline']>);
    expect(later).to.deep.equal(['later']);
  });

  it('does not copy the commands BullMQ defines on a shared connection onto each pipeline', async () => {
    const q = new Queue('lp', { connection: client, skipVersionCheck: true });
    await q.add('x', { n: 1 });
    const p = pipeline(client);
    const own = Object.keys(p);
    expect(own.filter((k) => /^(j[A-Z]|addStandardJob|moveToActive)/.test(k)), 'script methods live on the prototype').to.deep.equal([]);
    expect(typeof (p as unknown as Echo).jEcho).to.equal('function');
    expect(await execOrThrow(p.llen('bull:lp:wait'))).to.deep.equal([1]);
    await q.close();
  });
});
