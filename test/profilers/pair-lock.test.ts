// Two hosts probe one direction at a time (profilers/network/pair-lock.ts), against a real Redis:
// three profilers on loopback, each probe answered by a server that holds it 15 ms and counts
// how many probes of each pair of hosts are in flight at once.
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { redisKeys } from '../../config/redis-keys.js';
import { NetworkProfiler, defaultNetworkOptions } from '../../profilers/network/profiler.js';
import { lockPair, unlockPair } from '../../profilers/network/pair-lock.js';
import type { AgentRegistration } from '../../profilers/agent/registry.js';
import { sleep } from '../support/faults.js';

const NODES = ['a', 'b', 'c'];

describe('profilers: one probe at a time between two hosts (pair-lock.ts)', function () {
  this.timeout(30_000);
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  const keys = redisKeys(`pl${process.pid}:`);

  before(async () => {
    server = await startTestRedis();
    redis = new Redis(server.url, { lazyConnect: true });
    await redis.connect();
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('a pair lock is one key for both directions, owned, and expires by itself', async () => {
    expect(keys.pairProbe('a', 'b')).to.equal(keys.pairProbe('b', 'a'));
    const key = keys.pairProbe('x', 'y');
    expect(await lockPair(redis!, key, 'x:1', 200)).to.equal(true);
    expect(await lockPair(redis!, key, 'y:1', 200)).to.equal(false);
    await unlockPair(redis!, key, 'y:1'); // not the owner: no effect
    expect(await lockPair(redis!, key, 'y:1', 200)).to.equal(false);
    await sleep(250);
    expect(await lockPair(redis!, key, 'y:1', 200)).to.equal(true);
    await unlockPair(redis!, key, 'y:1');
    expect(await redis!.exists(key)).to.equal(0);
  });

  it('profilers never probe the same pair both ways at once, yet different pairs run in parallel', async () => {
    // Every probe is held 15 ms by its server, so probes that may overlap do.
    let inFlight = 0;
    let maxInFlight = 0;
    const servers: Server[] = [];
    const regs: AgentRegistration[] = [];
    for (const node of NODES) {
      const s = createServer((req, res) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        let bytes = 0;
        req.on('data', (c: Buffer) => (bytes += c.length));
        req.on('end', () => setTimeout(() => {
          inFlight--;
          res.end(JSON.stringify({ bytes }));
        }, 15));
      });
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      servers.push(s);
      regs.push({ node, host: '127.0.0.1', port: (s.address() as AddressInfo).port, pid: process.pid, startedAt: Date.now(), heartbeatAt: Date.now(), periodMs: 3000, hostname: 'test' });
    }
    const opts = { ...defaultNetworkOptions(), sizes: [1000, 20_000, 100_000], bootstrapRounds: 4, refreshMs: 3_600_000 };
    const profilers = NODES.map((node) => new NetworkProfiler(redis!, keys, node, opts, () => {}));
    for (const p of profilers) p.start();
    for (const p of profilers) p.setPeers(regs);
    const perLink = opts.sizes.length * opts.bootstrapRounds;
    const links = NODES.flatMap((f) => NODES.filter((t) => t !== f).map((t) => keys.linkSamples(f, t)));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline && (await Promise.all(links.map((k) => redis!.llen(k)))).some((n) => n < perLink)) await sleep(100);
    for (const p of profilers) await p.stop();
    for (const s of servers) s.close();
    // Per pair, both directions' probes as [start, end] intervals, in order of start.
    const overlaps: Record<string, number> = {};
    for (const [x, y] of [['a', 'b'], ['a', 'c'], ['b', 'c']] as const) {
      const samples = [...(await redis!.lrange(keys.linkSamples(x, y), 0, -1)), ...(await redis!.lrange(keys.linkSamples(y, x), 0, -1))];
      expect(samples.length, `samples between ${x} and ${y}`).to.equal(2 * perLink);
      const iv = samples
        .map((r) => JSON.parse(r) as { seconds: number; at: number })
        .map((s) => [s.at - s.seconds * 1000, s.at] as const)
        .sort((p, q) => p[0] - q[0]);
      overlaps[`${x}-${y}`] = iv.filter((v, k) => k > 0 && v[0] < iv[k - 1]![1] - 1).length;
    }
    expect(overlaps).to.deep.equal({ 'a-b': 0, 'a-c': 0, 'b-c': 0 });
    expect(maxInFlight, 'probes of different pairs ran at the same time').to.be.greaterThan(1);
  });
});
