// Fault 4: a task throws on some items. Each such item is retried with exponential backoff
// (default 3 attempts), then becomes a dead letter that `jupiter status` shows with the error
// (table and --json); every other item flows to the sink. Through the real CLI.
import { expect } from 'chai';
import { join } from 'node:path';
import type { DeadLetter } from '../../circe/queue/failures.js';
import type { TaskEvent } from '../../config/events.js';
import { countDeliveries, printCounts, writeChainApp, writeItems } from '../support/faults.js';
import { cliSuite } from '../support/cli-suite.js';

const APP = 'deadletter';
const PREFIX = 'jupiter:';
const N = 100;
const failing = (i: number): boolean => i % 10 === 3;

describe('fault: a task throws on some items (retries, backoff, dead letters in `jupiter status`)', function () {
  this.timeout(120_000);
  const { box, redis: stackRedis } = cliSuite('jupiter-deadletter-', APP);

  it('dead-letters the failing items after 3 attempts with growing delays; the others are delivered', async () => {
    const appDir = writeChainApp(box.cwd, APP, { tasks: 3, failAt: 1 });
    const files = writeItems(join(box.cwd, 'in'), N, 'x', (i) => (failing(i) ? `${i}x FAIL\n` : `${i}x\n`));
    const dep = JSON.parse((await box.ok(['deploy', appDir, '--runtime', 'process', '--wait', '--json'], { timeoutMs: 120_000 })).stdout) as { deployment: { outputDir: string } };
    const sub = await box.ok(['submit', APP, ...files, '--wait', '--timeout', '60']);
    expect(sub.stdout).to.include('failed');
    const redis = stackRedis();

    const bad = Array.from({ length: N }, (_, k) => k + 1).filter(failing).map((i) => `${i}x`);
    const good = Array.from({ length: N }, (_, k) => k + 1).filter((i) => !failing(i)).map((i) => `${i}x`);
    const c = await countDeliveries(redis, PREFIX, APP, dep.deployment.outputDir, good.map((i) => `${i}_t2.txt`), ['0s_t2.txt'], bad.length);

    // The JSON status: one dead letter per failing item, at t1, after 3 attempts, with the error.
    const st = JSON.parse((await box.ok(['status', APP, '--json'])).stdout) as { status: { deadLetterCount: number; deadLetters: DeadLetter[] } };
    expect(st.status.deadLetterCount).to.equal(bad.length);
    expect(st.status.deadLetters.map((d) => d.item).sort()).to.deep.equal([...bad].sort());
    for (const d of st.status.deadLetters) {
      expect(d).to.include({ task: 't1', attempts: 3, error: `t1 refuses ${d.item}` });
    }
    // The table names the count and shows the error.
    const table = (await box.ok(['status', APP])).stdout;
    expect(table).to.include(`${bad.length} dead letter(s)`);
    expect(table).to.include(`t1 refuses ${bad[0]}`);

    // Exponential backoff: the fail events of one item are ~1 s, then ~2 s apart (default 1 s base).
    const events = (await redis.xrange(`${PREFIX}app:${APP}:events`, '-', '+'))
      .map(([, f]) => JSON.parse(f[f.indexOf('json') + 1]!) as TaskEvent)
      .filter((e) => e.type === 'fail' && e.item === bad[0]);
    expect(events.map((e) => e.attempt)).to.deep.equal([1, 2, 3]);
    expect(events.map((e) => e.final)).to.deep.equal([false, false, true]);
    const gaps = [events[1]!.ts - events[0]!.ts, events[2]!.ts - events[1]!.ts];
    console.log(`      ${bad.length} dead letters after 3 attempts; retry gaps of item ${bad[0]}: ${gaps.map((g) => `${g} ms`).join(', ')}`);
    printCounts(c);
    expect(gaps[0]).to.be.at.least(900);
    expect(gaps[1]).to.be.at.least(1800);
    expect(c.missing).to.deep.equal([]);
    expect(c.lost).to.equal(0);
    expect(c.extraFiles).to.equal(0);
    expect(c.sinkDelivered).to.equal(good.length + 1);
  });
});
