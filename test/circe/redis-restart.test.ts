import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { fixtureAppDir, specOf, until } from './support.js';
import { configureApp, connectRedis, getStatus, Sink, submitItems, TaskRunner, waitForItems } from '../../circe/index.js';

describe('circe under a Redis restart (append-only persistence)', function () {
  this.timeout(120_000);

  it('reconnects every runner and the sink; nothing is lost', async () => {
    const work = mkdtempSync(join(tmpdir(), 'jupiter-restart-'));
    const dir = join(work, 'redis');
    let server = await new RedisServer({ dir, appendOnly: true }).start();
    const port = server.port;
    const url = server.url;
    const client = connectRedis(url);
    const app = specOf(fixtureAppDir('jsline'));
    const runners: Array<{ close(): Promise<void> }> = [];
    try {
      await configureApp(client, 'jr:', app.name, { lockMs: 3000, backoffMs: 200 });
      for (const t of app.tasks) runners.push(await TaskRunner.start({ app, task: t, node: 'n', redisUrl: url, prefix: 'jr:' }));
      const out = join(work, 'out');
      runners.push(await Sink.start({ app: app.name, redisUrl: url, prefix: 'jr:', outputDir: out }));
      const N = 1000;
      const files = Array.from({ length: N }, (_, i) => {
        const p = join(work, `${i + 1}r.txt`);
        writeFileSync(p, `r${i + 1}\n`);
        return p;
      });
      const items = await submitItems(client, 'jr:', app, files);
      await until(async () => (await getStatus(client, 'jr:', app)).sink.delivered >= 20, 30_000, 'first deliveries');
      // A graceful stop flushes the append-only file; restart on the same port mid-stream.
      const atRestart = (await getStatus(client, 'jr:', app)).sink.delivered;
      await server.stop();
      await new Promise((r) => setTimeout(r, 500));
      server = await new RedisServer({ dir, appendOnly: true, port }).start();
      const res = await waitForItems(client, 'jr:', app.name, items.map((i) => i.item), { timeoutMs: 90_000 });
      const st = await getStatus(client, 'jr:', app);
      const delivered = res.filter((r) => r.outputs.length === 1 && !r.failed).length;
      console.log(`      restarted Redis after ${atRestart} deliveries; sent ${N}, delivered ${delivered}, lost ${N - delivered}, duplicates suppressed ${st.sink.duplicatesSuppressed + st.tasks.reduce((a, t) => a + t.duplicates, 0)}`);
      expect(atRestart).to.be.lessThan(N);
      expect(delivered).to.equal(N);
      expect(readdirSync(out)).to.have.length(N);
    } finally {
      await Promise.all(runners.map((r) => r.close()));
      await client.quit().catch(() => undefined);
      await server.stop();
      rmSync(work, { recursive: true, force: true });
    }
  });
});
