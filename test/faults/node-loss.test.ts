// Fault 3: lose a node. The embedded default deployed through the real CLI in a temporary working
// directory; while 250 items stream, one node's agent and that node's runners and supervisors are
// killed with -9 (after 60 deliveries: the other 190 wait in the queues or in hand through the
// ~7 s until the loss is detected, and are delivered after; 500 items took 10 s more in CI). The hub's reconciler must notice within 10 s (heartbeat TTL 7.5 s), move the
// tasks to the surviving nodes and start runners there, and every item must arrive exactly once.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForItems } from '../../circe/home/wait.js';
import { readMapping } from '../../orchestrator/deploy/record.js';
import { countDeliveries, killPid, pidAlive, printCounts, until, writeChainApp, writeItems } from '../support/faults.js';
import { cliSuite } from '../support/cli-suite.js';

const APP = 'nodeloss';
const PREFIX = 'jupiter:';
const N = 250;

describe('fault: a node is lost mid-stream (real CLI, embedded stack, process runtime)', function () {
  this.timeout(180_000);
  const { box, redis: stackRedis } = cliSuite('jupiter-nodeloss-', APP);

  it('detects the loss within 10 s, moves its tasks, and delivers every item exactly once', async () => {
    const appDir = writeChainApp(box.cwd, APP, { tasks: 3, sleepMs: 10 });
    const files = writeItems(join(box.cwd, 'in'), N, 'n');
    const dep = JSON.parse((await box.ok(['deploy', appDir, '--runtime', 'process', '--wait', '--json'], { timeoutMs: 150_000 })).stdout) as { deployment: { outputDir: string } };
    const redis = stackRedis();
    const before = (await readMapping(redis, PREFIX, APP))!.mapping;
    // The node with most tasks (HEFT often puts a light chain on one node).
    const counts = new Map<string, number>();
    for (const n of Object.values(before)) counts.set(n, (counts.get(n) ?? 0) + 1);
    const victim = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
    const victimTasks = Object.keys(before).filter((t) => before[t] === victim);

    await box.ok(['submit', APP, ...files]);
    const stats = async (): Promise<number> => Number(await redis.hget(`${PREFIX}app:${APP}:stats`, 'delivered'));
    await until(async () => (await stats()) >= 60, 60_000, 'the stream to flow');

    // Kill the node: its agent, then each runner's supervisor before the runner (else it restarts it).
    const agentPid = box.stack().agents![victim]!.pid;
    const runners = box.runners(APP).filter((r) => r.node === victim);
    expect(runners.map((r) => r.task).sort()).to.deep.equal(victimTasks.sort());
    const t0 = Date.now();
    const atKill = await stats();
    killPid(agentPid);
    for (const r of runners) killPid(r.supervisorPid);
    for (const r of runners) killPid(r.runnerPid);
    await until(() => !pidAlive(agentPid) && runners.every((r) => !pidAlive(r.runnerPid) && !pidAlive(r.supervisorPid)), 5000, 'the node to die');

    // Detection: the reconciler's new placement (written once the new runners run).
    const after = await until(async () => {
      const m = (await readMapping(redis, PREFIX, APP))!.mapping;
      return victimTasks.every((t) => m[t] !== victim) ? m : undefined;
    }, 30_000, 'the reconciler to move the tasks', 100);
    const hubLog = readFileSync(join(box.stateDir, 'logs', 'hub.log'), 'utf8');
    const line = hubLog.split('\n').find((l) => l.includes(`${APP}: node(s) ${victim} lost`));
    expect(line, hubLog).to.be.a('string');
    const detectedMs = Date.parse(line!.split(' ')[0]!) - t0;
    const atDetect = await stats();
    const resumed = await until(async () => {
      const d = await stats();
      return d > atDetect || d >= N + 1 ? Date.now() : undefined;
    }, 60_000, 'deliveries to resume', 20);

    const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
    await waitForItems(redis, PREFIX, APP, items, { timeoutMs: 90_000 });
    const doneMs = Date.now() - t0;
    // The new runners take back what the lost ones held as they start (their logs say how much).
    const logs = await Promise.all(victimTasks.map((t) => box.run(['logs', APP, t])));
    const requeued = logs.reduce((a, r) => a + [...r.stdout.matchAll(/took back (\d+) job/g)].reduce((b, m) => b + Number(m[1]), 0), 0);
    const c = await countDeliveries(redis, PREFIX, APP, dep.deployment.outputDir, items.map((i) => `${i}_t2.txt`), ['0s_t2.txt']);
    console.log(`      lost ${victim} (${victimTasks.join(', ')}) after ${atKill} deliveries; detected in ${(detectedMs / 1000).toFixed(1)} s, ` +
      `moved to ${victimTasks.map((t) => after[t]).join(', ')} with ${requeued} held job(s) taken back by the new runners, deliveries resumed after ${((resumed - t0) / 1000).toFixed(1)} s, stream complete after ${(doneMs / 1000).toFixed(1)} s`);
    printCounts(c);
    expect(detectedMs).to.be.lessThan(10_000);
    expect(c.missing).to.deep.equal([]);
    expect(c.lost).to.equal(0);
    expect(c.extraFiles).to.equal(0);
    expect(c.sinkDelivered).to.equal(N + 1);
    expect(readFileSync(join(dep.deployment.outputDir, '17n_t2.txt'), 'utf8')).to.equal('17n\nt0\nt1\nt2\n');
    for (const t of victimTasks) expect(after[t]).to.not.equal(victim);

    // status shows the repaired placement; only the live runners are listed by the runtime.
    const st = JSON.parse((await box.ok(['status', APP, '--json'])).stdout) as { mapping: { mapper: string; mapping: Record<string, string> } };
    expect(st.mapping.mapper).to.match(/\+repair$/);
    expect(Object.values(st.mapping.mapping)).to.not.include(victim);
    const live = box.runners(APP).filter((r) => pidAlive(r.supervisorPid));
    expect(live.map((r) => `${r.task}@${r.node}`).sort()).to.deep.equal(['home@home', ...victimTasks.map((t) => `${t}@${after[t]}`), ...Object.keys(before).filter((t) => !victimTasks.includes(t)).map((t) => `${t}@${before[t]}`)].sort());
  });

  it('an agent lost while its runners live: the tasks move and the old runners stop', async () => {
    const redis = stackRedis();
    const st0 = box.stack();
    const before = (await readMapping(redis, PREFIX, APP))!.mapping;
    const victim = Object.values(before)[0]!;
    const old = box.runners(APP).filter((r) => r.node === victim && pidAlive(r.supervisorPid));
    expect(old.length).to.be.greaterThan(0);
    const t0 = Date.now();
    killPid(st0.agents![victim]!.pid);
    const after = await until(async () => {
      const m = (await readMapping(redis, PREFIX, APP))!.mapping;
      return old.every((r) => m[r.task] !== victim) ? m : undefined;
    }, 30_000, 'the reconciler to move the tasks', 100);
    const movedMs = Date.now() - t0;
    // The runners on the lost node were told to stop (after the item in hand): one runner per task.
    await until(() => old.every((r) => !pidAlive(r.supervisorPid) && !pidAlive(r.runnerPid)), 20_000, 'the old runners to stop');
    const files = writeItems(join(box.cwd, 'in2'), 100, 'p');
    await box.ok(['submit', APP, ...files, '--wait', '--timeout', '60']);
    const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
    const outDir = JSON.parse((await box.ok(['status', APP, '--json'])).stdout).deployment.outputDir as string;
    const c = await countDeliveries(redis, PREFIX, APP, outDir, items.map((i) => `${i}_t2.txt`), [
      '0s_t2.txt', ...Array.from({ length: N }, (_, k) => `${k + 1}n_t2.txt`),
    ]);
    console.log(`      agent of ${victim} killed, its runners alive: tasks moved to ${old.map((r) => after[r.task]).join(', ')} after ${(movedMs / 1000).toFixed(1)} s; the ${old.length} old runner(s) stopped`);
    printCounts(c);
    expect(c.lost).to.equal(0);
    expect(c.extraFiles).to.equal(0);
    const live = box.runners(APP).filter((r) => pidAlive(r.supervisorPid)).map((r) => r.task).sort();
    expect(live).to.deep.equal(['home', ...Object.keys(before)].sort());
  });

  it('teardown --stack leaves nothing running', async () => {
    const st = box.stack();
    const pids = [st.redis?.pid, st.hub?.pid, ...Object.values(st.agents ?? {}).map((a) => a.pid), ...box.runners(APP).flatMap((r) => [r.supervisorPid, r.runnerPid])];
    const r = await box.ok(['teardown', APP, '--stack']);
    expect(r.stdout).to.match(/removed process runner/);
    await until(() => pids.every((p) => !pidAlive(p)), 15_000, 'every process of the deployment to exit');
  });
});
