// Fault 6: a slow consumer. With `jupiter deploy --queue-cap 50`, the source holds back while a
// slow task's queue is full: sampled every 50 ms during the stream, no task queue holds more than
// the cap plus a small slack, and Redis memory stays bounded (the payload is far larger than what
// the queues may hold at once). Through the real CLI.
import { expect } from 'chai';
import { join } from 'node:path';
import type { DEFAULT_SETTINGS } from '../../circe/queue/settings.js';
import { queueDepths } from '../../circe/queue/status.js';
import { waitForItems } from '../../circe/home/wait.js';
import { loadApp } from '../../config/app/load.js';
import { countDeliveries, printCounts, sleep, writeChainApp, writeItems } from '../support/faults.js';
import { cliSuite } from '../support/cli-suite.js';

const APP = 'backpressure';
const PREFIX = 'jupiter:';
const N = 400;
const CAP = 50;
/**
 * Documented slack: the source counts what waits upstream of each queue, so a queue can only
 * exceed the cap by the items upstream tasks hold in hand (one per task at concurrency 1) while
 * they finish; 5 covers this three-task chain.
 */
const SLACK = 5;
const ITEM_BYTES = 64 * 1024;

describe('fault: a slow consumer (back-pressure bounds queues and Redis memory)', function () {
  this.timeout(120_000);
  const { box, redis: stackRedis } = cliSuite('jupiter-backpressure-', APP);

  it(`keeps every task queue within --queue-cap ${CAP} (+${SLACK}) while the source slows down`, async () => {
    const appDir = writeChainApp(box.cwd, APP, { tasks: 3, sleepOf: { 1: 20 } });
    const pad = 'x'.repeat(ITEM_BYTES);
    const files = writeItems(join(box.cwd, 'in'), N, 'b', (i) => `${i}b\n${pad}\n`);
    const dep = JSON.parse((await box.ok(['deploy', appDir, '--runtime', 'process', '--queue-cap', String(CAP), '--wait', '--json'], { timeoutMs: 120_000 })).stdout) as { deployment: { outputDir: string } };
    const redis = stackRedis();
    const settings = JSON.parse((await redis.hget(`${PREFIX}app:${APP}:settings`, 'json'))!) as typeof DEFAULT_SETTINGS;
    expect(settings.queueCap).to.equal(CAP);

    const app = await loadApp(appDir);
    const memory = async (): Promise<number> => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))![1]);
    const baseline = await memory();
    let maxDepth = 0;
    let maxTask = '';
    let peak = baseline;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const depths = await queueDepths(redis, PREFIX, app);
        for (const [t, d] of Object.entries(depths)) if (d > maxDepth) [maxDepth, maxTask] = [d, t];
        peak = Math.max(peak, await memory());
        samples++;
        await sleep(50);
      }
    })();
    const t0 = Date.now();
    const sub = box.ok(['submit', APP, ...files], { timeoutMs: 90_000 });
    const submittedMs = await sub.then(() => Date.now() - t0);
    const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
    await waitForItems(redis, PREFIX, APP, items, { timeoutMs: 90_000 });
    sampling = false;
    await sampler;
    const growth = peak - baseline;
    const c = await countDeliveries(redis, PREFIX, APP, dep.deployment.outputDir, items.map((i) => `${i}_t2.txt`), ['0s_t2.txt']);
    console.log(`      ${samples} samples: deepest queue ${maxDepth} (${maxTask}, cap ${CAP}); submit took ${(submittedMs / 1000).toFixed(1)} s (held back); ` +
      `Redis used_memory peak +${(growth / 1e6).toFixed(1)} MB for ${(N * ITEM_BYTES / 1e6).toFixed(1)} MB streamed`);
    printCounts(c);
    expect(maxDepth).to.be.at.most(CAP + SLACK);
    expect(maxDepth).to.be.at.least(CAP / 2); // the slow task really was the bottleneck
    // What the queues may hold at once (cap + slack per queue, two copies while a task runs),
    // against 25.6 MB if the source had not slowed down.
    expect(growth).to.be.lessThan(2 * (CAP + SLACK) * ITEM_BYTES * 2);
    expect(c.missing).to.deep.equal([]);
    expect(c.lost).to.equal(0);
    expect(c.extraFiles).to.equal(0);
    expect(c.sinkDelivered).to.equal(N + 1);
  });
});
