// The agent's two task-level probes (profilers/overhead/) run real runners on a scratch app and
// swallow every error into `undefined`, the model then keeping only the idle probes. So a probe
// that broke would go unnoticed: this runs both for real, once each, and checks that they
// measure something and leave nothing behind (keys, scratch folders).
import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { LOCAL_HOP_BYTES, measureLocalHop } from '../../profilers/overhead/local-hop-probe.js';
import { measureTaskCost } from '../../profilers/overhead/task-probe.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { ownTempFolder } from '../support/own-temp.js';

const PREFIX = 'jprobe:';
const scratch = (): string[] => readdirSync(tmpdir()).filter((f) => /^jupiter-(taskprobe|hopprobe)-/.test(f));

describe('profilers: the task and same-node hop probes on real runners', function () {
  this.timeout(60_000);
  let server: TestRedis;
  let redis: Redis;
  // A temp folder of its own: agents of tests running at the same time make scratch folders too.
  ownTempFolder(async () => {
    redis.disconnect();
    await server.stop();
  });
  before(async () => {
    server = await startTestRedis();
    redis = connectRedis(server.url);
  });

  it('a task probe gives the CPU and wall time of a no-op Python task through a runner', async () => {
    const cost = await measureTaskCost(redis, server.url, PREFIX, 'n1', 3);
    expect(cost, 'measureTaskCost returned undefined: its runner or Python worker failed').to.not.equal(undefined);
    expect(cost!.cpuSec).to.be.greaterThan(0).and.lessThan(5);
    expect(cost!.wallSec).to.be.greaterThan(0).and.lessThan(10);
  });

  it('a same-node hop probe prices the bytes of a direct-path hop and leaves no keys or folders', async () => {
    const hop = await measureLocalHop(redis, PREFIX, 'n1', 1);
    expect(hop, 'measureLocalHop returned undefined: its runners failed').to.not.equal(undefined);
    expect(hop!.bytes).to.equal(LOCAL_HOP_BYTES);
    expect(hop!.bigGapSec).to.be.greaterThan(0);
    expect(hop!.smallGapSec).to.be.greaterThan(0);
    expect(hop!.secPerByte).to.be.at.least(0);
    expect(Number.isFinite(hop!.secPerByte)).to.equal(true);
    expect(hop!.cpuSecPerByte).to.be.at.least(0);
    expect(Number.isFinite(hop!.cpuSecPerByte)).to.equal(true);
    // Both probes tore their scratch apps down (this Redis holds nothing else).
    expect(await redis.keys('*')).to.deep.equal([]);
    expect(scratch()).to.deep.equal([]);
  });
});
