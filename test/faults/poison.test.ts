// Fault 8: a task that kills its own runner on one item (a poison item). Each time the runner
// dies holding a job, the supervisor restarts it and the new runner takes the job back: the
// bundle the poison item came in is split at once (the other files go on alone), and the single
// job carrying the poison item is given up after it killed its runner three times, so the item
// becomes a dead letter instead of crashing the runner forever. Every other item is delivered
// exactly once.
import { expect } from 'chai';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import type { ClusterConfig } from '../../config/types.js';
import { configureApp, getStatus, ProcessRuntime, submitItems, waitForItems } from '../../circe/index.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import { circeSuite } from '../support/circe-suite.js';
import { countDeliveries, printCounts, writeChainApp, writeItems } from '../support/faults.js';

const N = 60;
const POISON = 23;

describe('fault: a task that kills its runner on one item (poison item)', function () {
  this.timeout(120_000);
  const rig = circeSuite({ workPrefix: 'jupiter-poison-' });

  it('dead-letters the poison item after its runner died holding it; the others are delivered once', async () => {
    const { work, client, redis } = rig;
    const app = await loadApp(writeChainApp(work, 'poison', { tasks: 2, crashAt: 0 }));
    const cluster = { stateDir: join(work, '.jupiter') } as ClusterConfig;
    const runtime = new ProcessRuntime({ runsDir: join(work, 'runs'), stopGraceSec: 5 });
    const prefix = 'pz:';
    await configureApp(client, prefix, app.name, { backoffMs: 100 });
    const specs: RunnerSpec[] = [...app.dagTasks, 'home'].map((task) => ({ app: app.name, task, node: task === 'home' ? 'home' : 'node1', runId: 'r', redisUrl: redis.url, redisPrefix: prefix }));
    try {
      await runtime.prepare(app, cluster);
      await runtime.start(app, specs, cluster);
      // One batch from the source: the poison item travels in a bundle with the others.
      const files = writeItems(join(work, 'in'), N, 'p', (i) => `${i}p\n${i === POISON ? 'CRASH\n' : ''}`);
      const items = (await submitItems(client, prefix, app, files, { runId: 'r' })).map((i) => i.item);
      const res = await waitForItems(client, prefix, app.name, items, { timeoutMs: 100_000 });
      const failed = res.filter((r) => r.failed).map((r) => r.item);
      expect(failed).to.deep.equal([`${POISON}p`]);
      const outDir = join(work, 'runs', app.name, 'r', 'output');
      const c = await countDeliveries(client, prefix, app.name, outDir, items.filter((i) => i !== `${POISON}p`).map((i) => `${i}_t1.txt`), [], 1);
      printCounts(c);
      expect(c.missing).to.deep.equal([]);
      expect(c.extraFiles).to.equal(0);
      expect(c.sinkDelivered).to.equal(N - 1);
      const st = await getStatus(client, prefix, app);
      expect(st.deadLetters.map((d) => [d.task, d.item])).to.deep.equal([['t0', `${POISON}p`]]);
      expect(st.deadLetters[0]!.error).to.match(/runner of t0 died 3 times while holding this job/);
      const log = await runtime.logs(app.name, 't0', cluster, 400);
      const restarts = [...log.matchAll(/died \(SIGKILL\); restart #(\d+)/g)].length;
      console.log(`      runner t0 killed by the poison item ${restarts} times; ${log.match(/gave up/g)?.length ?? 0} give-up(s) logged`);
      expect(log).to.match(/split into jobs of one file/);
      expect(log).to.match(/gave up 1 job\(s\) whose runners kept dying/);
    } finally {
      await runtime.teardown(app.name, cluster);
    }
  });
});
