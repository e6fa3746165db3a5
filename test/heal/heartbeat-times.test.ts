// When the agents' heartbeats landed and expire, as the hub reads them (profilers/agent/registry.ts
// heartbeatTimes), against a real Redis: from the keys' remaining lifetimes, on the reader's
// clock, whatever the agents' clocks say.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { redisKeys } from '../../config/redis-keys.js';
import { heartbeat, heartbeatTimes, type AgentRegistration } from '../../profilers/agent/registry.js';
import { sleep } from '../support/faults.js';

describe('heal: heartbeat times from Redis (heartbeatTimes)', function () {
  this.timeout(20_000);
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  const keys = redisKeys(`hb${process.pid}:`);
  const reg = (node: string, periodMs: number): AgentRegistration => ({ node, host: '127.0.0.1', port: 1, pid: 1, startedAt: 0, heartbeatAt: 0, periodMs, hostname: 'x' });

  before(async () => {
    server = await startTestRedis();
    redis = new Redis(server.url, { lazyConnect: true });
    await redis.connect();
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('gives each live heartbeat\'s landing and expiry on the reader\'s clock; expired ones are left out', async () => {
    const t0 = Date.now();
    await heartbeat(redis!, keys, reg('a', 400)); // lives 1 s
    await sleep(300);
    const t1 = Date.now();
    await heartbeat(redis!, keys, reg('b', 2000)); // lives 5 s
    const times = await heartbeatTimes(redis!, keys);
    expect([...times.keys()]).to.deep.equal(['a', 'b']);
    const a = times.get('a')!;
    const b = times.get('b')!;
    expect(a.at).to.be.within(t0 - 50, t0 + 100);
    expect(a.expires - a.at).to.equal(1000);
    expect(b.at).to.be.within(t1 - 50, Date.now() + 50);
    expect(b.expires - b.at).to.equal(5000);
    await sleep(1000);
    expect([...(await heartbeatTimes(redis!, keys)).keys()]).to.deep.equal(['b']);
  });
});
