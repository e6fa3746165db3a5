// The nodes of one machine time their task calls in turns (profilers/agent/machine-turn.ts),
// against a real Redis: three nodes profile the jsline fixture at once, and no two of them are
// ever inside a turn together; a turn left by a killed agent expires; a node that cannot get a
// turn times its calls anyway after its wait.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { redisKeys } from '../../config/redis-keys.js';
import { loadApp } from '../../config/app/load.js';
import { machineTurn, type Turn } from '../../profilers/agent/machine-turn.js';
import { profileApp } from '../../profilers/exec/profile-app.js';
import { timeAgain } from '../../profilers/exec/time-calls.js';
import { fixtureAppDir } from '../circe/support.js';

describe('profilers: one node of a machine times its calls at a time (machine-turn.ts)', function () {
  this.timeout(60_000);
  let dir = '';
  let server: RedisServer | undefined;
  let redis: Redis | undefined;
  const keys = redisKeys(`mt${process.pid}:`);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'jupiter-machineturn-'));
    server = await new RedisServer({ dir }).start();
    redis = new Redis(server.url, { lazyConnect: true });
    await redis.connect();
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('three nodes profiling at once: every task timed, never two nodes inside a turn, the key gone after', async () => {
    const app = await loadApp(fixtureAppDir('jsline'));
    const key = keys.machineTiming('boot:test');
    let inside = 0;
    let most = 0;
    let turns = 0;
    const watched = (node: string): Turn => {
      const turn = machineTurn(redis!, key, `${node}:req1`);
      return (fn) => turn(async () => {
        inside++;
        turns++;
        most = Math.max(most, inside);
        try {
          return await fn();
        } finally {
          inside--;
        }
      });
    };
    const results = await Promise.all(['node1', 'node2', 'node3'].map((n) => profileApp(app, n, { workDir: dir, turn: watched(n) })));
    for (const r of results) {
      expect(r.failed).to.deep.equal([]);
      expect(r.profiles.map((p) => p.task).sort()).to.deep.equal(['a', 'b', 'c']);
    }
    expect(turns).to.equal(9);
    expect(most).to.equal(1);
    expect(await redis!.exists(key)).to.equal(0);
  });

  it('a turn held by a killed agent expires; until then others wait', async () => {
    const key = keys.machineTiming('boot:expiry');
    await redis!.set(key, 'dead-agent:req', 'PX', 300);
    const t0 = Date.now();
    const waited = await machineTurn(redis!, key, 'node1:req2')(async () => {
      expect(await redis!.get(key)).to.equal('node1:req2');
      return Date.now() - t0;
    });
    expect(waited).to.be.at.least(250);
    expect(await redis!.exists(key)).to.equal(0);
  });

  it('after its longest wait a node times anyway, and leaves the holder\'s turn alone', async () => {
    const key = keys.machineTiming('boot:stuck');
    await redis!.set(key, 'slow-node:req', 'PX', 10_000);
    const ran = await machineTurn(redis!, key, 'node2:req3', { maxWaitMs: 100 })(async () => 'timed');
    expect(ran).to.equal('timed');
    expect(await redis!.get(key)).to.equal('slow-node:req');
    await redis!.del(key);
  });

  it('short calls are timed up to ten times, long ones up to five within 0.3 s, a slow one twice', () => {
    const calls = (sec: number): number => {
      let n = 0;
      while (timeAgain(n, n * sec)) n++;
      return n;
    };
    expect(calls(0.004)).to.equal(10);
    expect(calls(0.02)).to.equal(5);
    expect(calls(0.1)).to.equal(3);
    expect(calls(0.5)).to.equal(2);
  });

  it('a failing call gives its turn back', async () => {
    const key = keys.machineTiming('boot:fail');
    const turn = machineTurn(redis!, key, 'node3:req4');
    let caught = '';
    await turn(async () => {
      throw new Error('task failed');
    }).catch((e: Error) => {
      caught = e.message;
    });
    expect(caught).to.equal('task failed');
    expect(await redis!.exists(key)).to.equal(0);
  });
});
