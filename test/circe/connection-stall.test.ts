// A Redis connection stalled behind a cut link is dropped and made again (circe/queue/connection.ts
// STALL_MS, ioredis socketTimeout), against a real Redis behind a relay that can cut the link:
// a command sent while the link was down is answered soon after the link returns, not when the
// old connection's retransmissions would get through.
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { connectRedis, STALL_MS } from '../../circe/queue/connection.js';
import { cuttableLink, type CuttableLink } from '../support/cuttable-link.js';
import { sleep } from '../support/faults.js';

describe('circe: a Redis connection stalled behind a cut link reconnects (connection.ts)', function () {
  this.timeout(30_000);
  let server: TestRedis | undefined;
  let link: CuttableLink | undefined;
  let redis: Redis | undefined;

  before(async () => {
    server = await startTestRedis();
    const u = new URL(server.url);
    link = await cuttableLink({ host: u.hostname, port: Number(u.port) });
  });
  after(async () => {
    redis?.disconnect();
    await link?.close();
    await server?.stop();
  });

  it('a command sent during the cut is answered within a stall period of the link\'s return, on a new connection', async () => {
    const u = new URL(server!.url);
    u.host = link!.address;
    const stallMs = 500;
    redis = connectRedis(u.toString(), { stallMs });
    expect(await redis.set('k', 'v')).to.equal('OK');
    link!.cut();
    const t0 = Date.now();
    const answer = redis.get('k');
    await sleep(2000);
    link!.restore();
    const restoredAt = Date.now();
    expect(await answer).to.equal('v');
    const after = Date.now() - restoredAt;
    console.log(`      cut 2.0 s; answered ${after} ms after the link returned (${Date.now() - t0} ms in all)`);
    // The old connection stays silent for good (the relay's stand-in for a long backoff): only a
    // new one can have answered (without the stall rule this waits out the test's timeout).
    expect(STALL_MS).to.be.above(10_000); // above BullMQ's longest blocking wait
  });
});
