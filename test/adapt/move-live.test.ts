// Live re-map: `jupiter remap <app> --move task=node` while items stream. The embedded default
// through the real CLI (process runtime, three local nodes with agents, the hub), on the direct
// data path with 8 KB files (over the inline limit, so outputs sit in the producing node's store
// until taken). The moved task's runner on the old node must stop after its item and serve what it
// stored until taken; the new one consumes the same queue. Nothing lost, nothing twice at the sink.
import { expect } from 'chai';
import { join } from 'node:path';
import { waitForItems } from '../../circe/home/wait.js';
import { appKeys } from '../../circe/queue/keys.js';
import { readMapping } from '../../orchestrator/deploy/record.js';
import { countDeliveries, pidAlive, printCounts, until, writeChainApp, writeItems } from '../support/faults.js';
import { cliSuite } from '../support/cli-suite.js';

const APP = 'livemove';
const PREFIX = 'jupiter:';
const N = 300;

describe('adapt: moving a task live (real CLI, embedded stack, process runtime, direct data path)', function () {
  this.timeout(180_000);
  const { box, redis: stackRedis } = cliSuite('jupiter-livemove-', APP);

  it('`jupiter remap --move` moves the task mid-stream: sent N, delivered N, lost 0, no duplicate at the sink', async () => {
    const appDir = writeChainApp(box.cwd, APP, { tasks: 3, sleepMs: 5 });
    const files = writeItems(join(box.cwd, 'in'), N, 'm', (i) => `${i}m\n${'x'.repeat(8192)}\n`);
    const dep = JSON.parse((await box.ok(['deploy', appDir, '--runtime', 'process', '--data-path', 'direct', '--wait', '--json'], { timeoutMs: 150_000 })).stdout) as { deployment: { outputDir: string } };
    const redis = stackRedis();
    const before = (await readMapping(redis, PREFIX, APP))!.mapping;
    const nodes = Object.keys(box.stack().agents ?? {});
    const to = nodes.find((n) => n !== before.t1)!;
    const old = box.runners(APP).find((r) => r.task === 't1')!;

    await box.ok(['submit', APP, ...files]);
    const stats = async (): Promise<number> => Number(await redis.hget(appKeys(PREFIX, APP).stats, 'delivered'));
    await until(async () => (await stats()) >= 50, 60_000, 'the stream to flow');
    const atMove = await stats();
    const t0 = Date.now();
    const moved = await box.ok(['remap', APP, '--move', `t1=${to}`]);
    const movedMs = Date.now() - t0;
    expect(moved.stdout).to.match(new RegExp(`Moved t1 ${before.t1} -> ${to} live`));

    const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
    await waitForItems(redis, PREFIX, APP, items, { timeoutMs: 90_000 });
    const c = await countDeliveries(redis, PREFIX, APP, dep.deployment.outputDir, items.map((i) => `${i}_t2.txt`), ['0s_t2.txt']);
    console.log(`      t1 moved ${before.t1} -> ${to} after ${atMove} of ${N} deliveries, in ${(movedMs / 1000).toFixed(1)} s (the CLI's whole run)`);
    printCounts(c);
    expect(c.missing).to.deep.equal([]);
    expect(c.lost).to.equal(0);
    expect(c.extraFiles).to.equal(0);
    expect(c.sinkDelivered).to.equal(N + 1);

    // The placement everyone reads, the event, and the runners: t1 runs on its new node only.
    const after = (await readMapping(redis, PREFIX, APP))!;
    expect(after.mapping.t1).to.equal(to);
    expect(after.mapper).to.match(/\+remap$/);
    const ev = JSON.parse((await redis.lindex(`${PREFIX}app:${APP}:remaps`, 0))!) as { kind: string; trigger: string; moves: Array<{ task: string; to: string }> };
    expect(ev.kind).to.equal('remap');
    expect(ev.trigger).to.equal('manual');
    expect(ev.moves).to.deep.equal([{ task: 't1', from: before.t1, to }]);
    await until(() => !pidAlive(old.runnerPid) && !pidAlive(old.supervisorPid), 20_000, 'the old runner to stop');
    const live = box.runners(APP).filter((r) => pidAlive(r.supervisorPid)).map((r) => `${r.task}@${r.node}`);
    expect(live).to.include(`t1@${to}`);
    expect(live).to.not.include(`t1@${before.t1}`);
  });

  it('rejects a move it cannot make, with what to do instead', async () => {
    const bad = await box.run(['remap', APP, '--move', 't9=node1']);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/no task "t9"/);
    const nowhere = await box.run(['remap', APP, '--move', 't1=mars']);
    expect(nowhere.code).to.not.equal(0);
    expect(nowhere.stderr).to.match(/"mars" is not a live node/);
  });
});
