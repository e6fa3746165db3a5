// Fault 2: restart Redis (append-only persistence, as the embedded stack runs it) in the middle of
// a 400-item stream. The source is still submitting when Redis goes away (a small queue cap keeps
// it back-pressured for the whole run), the runners are real processes and the sink is one too:
// every component reconnects (BullMQ's production settings) and every item arrives exactly once.
// (Moved here from test/circe/redis-restart.test.ts.)
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import type { ClusterConfig } from '../../config/types.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { configureApp, connectRedis, ProcessRuntime, submitItems, waitForItems } from '../../circe/index.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import { countDeliveries, printCounts, sleep, until, writeChainApp, writeItems } from '../support/faults.js';

describe('fault: Redis restarts mid-stream (append-only persistence)', function () {
  this.timeout(180_000);

  it('the source, the runner processes and the sink reconnect; nothing is lost', async () => {
    const work = mkdtempSync(join(tmpdir(), 'jupiter-restart-'));
    const dir = join(work, 'redis');
    let server = await new RedisServer({ dir, appendOnly: true }).start();
    const port = server.port;
    const client = connectRedis(server.url);
    const app = await loadApp(writeChainApp(work, 'restart', { tasks: 3, sleepMs: 2 }));
    const cluster = { stateDir: join(work, '.jupiter') } as ClusterConfig;
    const runtime = new ProcessRuntime({ runsDir: join(work, 'runs'), stopGraceSec: 5 });
    const prefix = 'jr:';
    const N = 400;
    try {
      await configureApp(client, prefix, app.name, { lockMs: 3000, backoffMs: 200, queueCap: 50 });
      const specs: RunnerSpec[] = [...app.dagTasks, 'home'].map((task) => ({ app: app.name, task, node: task === 'home' ? 'home' : 'node1', runId: 'r', redisUrl: server.url, redisPrefix: prefix }));
      await runtime.start(app, specs, cluster);
      const outDir = join(work, 'runs', app.name, 'r', 'output');
      const files = writeItems(join(work, 'in'), N, 'r');
      let submittedBefore = 0;
      const submitting = submitItems(client, prefix, app, files, { runId: 'r', onProgress: (d) => (submittedBefore = d) });
      await until(async () => Number(await client.hget(`${prefix}app:${app.name}:stats`, 'delivered')) >= 100, 60_000, 'the first deliveries');
      // A graceful stop flushes the append-only file; restart on the same port mid-stream.
      const atRestart = Number(await client.hget(`${prefix}app:${app.name}:stats`, 'delivered'));
      const atSubmit = submittedBefore;
      const t0 = Date.now();
      await server.stop();
      await sleep(1000);
      server = await new RedisServer({ dir, appendOnly: true, port }).start();
      const downMs = Date.now() - t0;
      const items = (await submitting).map((i) => i.item);
      await waitForItems(client, prefix, app.name, items, { timeoutMs: 120_000 });
      const c = await countDeliveries(client, prefix, app.name, outDir, items.map((i) => `${i}_t2.txt`));
      console.log(`      Redis down for ${(downMs / 1000).toFixed(1)} s after ${atRestart} deliveries, with ${atSubmit} of ${N} items submitted`);
      printCounts(c);
      expect(atSubmit).to.be.lessThan(N);
      expect(atRestart).to.be.lessThan(N);
      expect(c.missing).to.deep.equal([]);
      expect(c.lost).to.equal(0);
      expect(c.extraFiles).to.equal(0);
      expect(c.sinkDelivered).to.equal(N);
      expect(readFileSync(join(outDir, '17r_t2.txt'), 'utf8')).to.equal('17r\nt0\nt1\nt2\n');
    } finally {
      await runtime.teardown(app.name, cluster).catch(() => undefined);
      client.disconnect();
      await server.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
