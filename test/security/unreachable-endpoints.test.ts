// The bad-input corpus items that need a deploy, not just `validate` (test/config/bad-input.test.ts
// covers the rest): an unreachable Redis endpoint and an unreachable Docker endpoint make
// `jupiter deploy` exit 1 with a message naming the endpoint (its password masked), and nothing
// stays deployed — no runner processes, no Redis keys of the app. A malformed app exits 2 before
// anything starts.
import { expect } from 'chai';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { deployedApps } from '../../orchestrator/deploy/record.js';
import { freePort } from '../../orchestrator/stack/free-port.js';
import { fixturesDir } from '../support/paths.js';
import { CliSandbox, pidAlive, writeChainApp } from '../support/faults.js';

const SECRET = 'Unre4chable-pw-5e1';

describe('bad input: unreachable endpoints and malformed apps leave nothing deployed', function () {
  this.timeout(120_000);

  it('an unreachable Redis (JUPITER_REDIS_URL to a closed port): exit 1, the endpoint named, the password masked', async () => {
    const port = await freePort();
    const box = new CliSandbox('jupiter-noredis-', { JUPITER_REDIS_URL: `redis://jupiter:${SECRET}@127.0.0.1:${port}` });
    try {
      const appDir = writeChainApp(box.cwd, 'noredis');
      const t0 = Date.now();
      const r = await box.run(['deploy', appDir, '--runtime', 'process']);
      console.log(`      exit ${r.code} after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${r.stderr.trim().split('\n').filter((l) => l.startsWith('jupiter:'))[0]}`);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.include(`redis://jupiter:***@127.0.0.1:${port}`);
      expect(r.stderr).to.match(/not reachable: .*ECONNREFUSED/);
      expect(r.stdout + r.stderr).to.not.include(SECRET);
      // Nothing started: no hub, no runners.
      expect(box.stack().hub).to.equal(undefined);
      expect(existsSync(join(box.stateDir, 'apps'))).to.equal(false);
    } finally {
      await box.dispose();
    }
  });

  it('an unreachable Docker engine: exit 1 naming the node and endpoint; no runners, no keys left', async () => {
    const box = new CliSandbox('jupiter-nodocker-');
    let redis: Redis | undefined;
    const socket = join(box.cwd, 'no-dockerd-here.sock');
    try {
      writeFileSync(join(box.cwd, 'jupiter.config.json'), `${JSON.stringify({
        runtime: 'docker',
        nodes: [
          // Every node, home too: the mapper may place tasks on any of them.
          { name: 'home', host: '127.0.0.1', docker: `unix://${socket}` },
          { name: 'node1', host: '127.0.0.1', docker: `unix://${socket}` },
          { name: 'node2', host: '127.0.0.1', docker: `unix://${socket}` },
        ],
      }, null, 2)}\n`);
      const appDir = writeChainApp(box.cwd, 'nodocker');
      const r = await box.run(['deploy', appDir], { timeoutMs: 90_000 });
      console.log(`      exit ${r.code}: ${r.stderr.trim().split('\n').filter((l) => l.startsWith('jupiter:'))[0]}`);
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.match(/Docker engine of node (home|node[12])/);
      expect(r.stderr).to.include(socket);
      expect(r.stderr).to.not.match(/internal error|at .*\.js:\d+/);
      // The deploy removed what it had created: no deployment, no keys, no live runner.
      redis = connectRedis(box.stack().redis!.url);
      expect(await deployedApps(redis, 'jupiter:')).to.deep.equal([]);
      expect(await redis.keys('jupiter:app:nodocker:*')).to.deep.equal([]);
      expect(box.runners('nodocker').filter((s) => pidAlive(s.supervisorPid) || pidAlive(s.runnerPid))).to.deep.equal([]);
    } finally {
      redis?.disconnect();
      await box.dispose();
    }
  });

  it('a malformed app (a cycle): exit 2 with file:line, before any service starts', async () => {
    const box = new CliSandbox('jupiter-badapp-');
    try {
      const r = await box.run(['deploy', join(fixturesDir, 'bad-apps', 'cycle')]);
      expect(r.code).to.equal(2);
      expect(r.stderr).to.match(/configuration\.txt:3: .*cycle/);
      expect(existsSync(join(box.stateDir, 'stack.json'))).to.equal(false);
    } finally {
      await box.dispose();
    }
  });
});
