// What a new user tripped over (issue 15), through the real CLI on one embedded stack in a fresh
// working directory, with a small JavaScript chain app deployed from a folder path:
//   7. which state folder is in use is printed, and a configuration elsewhere resolves its own;
//   1. a deploy that cannot start (its Docker engine is unreachable) leaves the running
//      deployment untouched, and says so; one that fails after replacing it says nothing runs;
//   3. `teardown <folder path>` removes the deployment made from that path;
//   4. after teardown, a new MQTT subscriber gets nothing of the app (retained topics cleared);
//  11. a submitted item whose output name another item took gets its own file, and the submit
//      table names that file (not the other item's).
import { expect } from 'chai';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { isAlive } from '../../circe/runtime/pid.js';
import { cliSuite } from '../support/cli-suite.js';
import { killPid, until, writeChainApp } from '../support/faults.js';

const APP = 'newcomer';

/** Retained messages a fresh subscriber of jupiter/<app>/# gets (topics with a payload), after a quiet spell. */
async function retainedOf(hub: { mqttUrl: string; mqttUsername?: string; mqttPassword?: string }, app: string, quietMs = 400): Promise<string[]> {
  const client = await mqtt.connectAsync(hub.mqttUrl, { reconnectPeriod: 0, username: hub.mqttUsername, password: hub.mqttPassword });
  const got: string[] = [];
  try {
    client.on('message', (topic, payload, packet) => {
      if (packet.retain && payload.length > 0) got.push(topic);
    });
    await client.subscribeAsync(`jupiter/${app}/#`);
    await new Promise((r) => setTimeout(r, quietMs));
    return got.sort();
  } finally {
    await client.endAsync();
  }
}

describe('issue 15: deployments are not lost, found by path, cleared from MQTT; the state folder is named', function () {
  this.timeout(120_000);
  const { box } = cliSuite('jupiter-newcomer-', APP);
  let appDir: string;
  let runId: string;

  before(async () => {
    appDir = writeChainApp(join(box.cwd, 'my-apps'), APP, { tasks: 2 });
    const r = await box.ok(['deploy', appDir, '--runtime', 'process', '--wait', '--json'], { timeoutMs: 110_000 });
    runId = (JSON.parse(r.stdout) as { deployment: { runId: string } }).deployment.runId;
  });

  it('7: says which state folder is in use; a configuration elsewhere resolves stateDir against its own folder', async () => {
    const here = await box.ok(['stack', 'status']);
    expect(here.stdout).to.include(`state folder: ${box.stateDir} (default .jupiter in the working directory`);
    expect(here.stdout).to.match(/redis\s*│\s*\d+\s*│\s*running/);
    const elsewhere = join(box.cwd, 'lab');
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, 'jupiter.config.json'), JSON.stringify({ stateDir: 'state' }));
    const other = await box.ok(['stack', 'status'], { env: { JUPITER_CONFIG: join(elsewhere, 'jupiter.config.json') } });
    expect(other.stdout).to.include(`state folder: ${join(elsewhere, 'state')} (stateDir "state" of`);
    expect(other.stdout).to.include('relative to its folder');
    expect(other.stdout).to.match(/redis\s*│\s*-\s*│\s*stopped/);
  });

  it('1: a deploy whose Docker engine is unreachable fails before touching the running deployment', async () => {
    const pids = box.runners(APP).map((s) => s.runnerPid);
    expect(pids).to.have.length(3); // t0, t1, home
    // The nodes' local agents too: a deploy that stopped them before finding the engines
    // unreachable left the running deployment's nodes without agents, and the reconciler then
    // moved its tasks (seen under load, when the failing deploy took long enough).
    const agents = Object.values(box.stack().agents ?? {}).map((a) => a.pid);
    expect(agents).to.have.length(3);
    // Same working directory (same state folder), but every node's engine is a socket nobody serves.
    const cfg = join(box.cwd, 'jupiter.config.json');
    const sock = `unix://${join(box.cwd, `no-dockerd-${process.pid}.sock`)}`;
    writeFileSync(cfg, JSON.stringify({ nodes: [{ name: 'home', host: '127.0.0.1' }, ...['node1', 'node2', 'node3'].map((name) => ({ name, host: '127.0.0.1', docker: sock }))] }));
    try {
      const r = await box.run(['deploy', appDir, '--runtime', 'docker'], { timeoutMs: 110_000 });
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.include('Docker engine of node');
      expect(r.stderr, r.stderr).to.include(`state: the previous deployment of ${APP} (run ${runId}) was not touched and still runs`);
      expect(r.stderr).to.not.include('Removing the previous deployment');
    } finally {
      rmSync(cfg, { force: true });
    }
    const st = JSON.parse((await box.ok(['status', APP, '--json'])).stdout) as { deployment: { runId: string; runtime: string } };
    expect(st.deployment).to.include({ runId, runtime: 'process' });
    expect(pids.filter((p) => !isAlive(p)), 'runners killed by the failed deploy').to.deep.equal([]);
    expect(agents.filter((p) => !isAlive(p)), 'agents stopped by the failed deploy').to.deep.equal([]);
  });

  it('1: a --wait that times out after the new deployment is up keeps it running and says so', async () => {
    // The same app from another folder, with a task too slow for the 1 s --wait (each item takes
    // at least 4 s): every check passes, the running deployment is replaced, the new one starts and
    // takes its inputs, then the wait gives up. The items are still streaming: removing the
    // deployment then would throw them away.
    // Not exec-profiled: a deploy would otherwise time every 4 s task on every node first.
    const slowDir = writeChainApp(join(box.cwd, 'slow-apps'), APP, { tasks: 2, sleepMs: 4000, noExecProfile: true });
    const old = box.runners(APP).map((s) => s.runnerPid);
    expect(old).to.have.length(3);
    const r = await box.run(['deploy', slowDir, '--runtime', 'process', '--wait', '--timeout', '1'], { timeoutMs: 110_000 });
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stderr).to.include('did not finish in time');
    expect(r.stderr, r.stderr).to.match(new RegExp(`state: the new deployment of ${APP} \\(run \\S+\\) is up and keeps running`));
    expect(r.stderr).to.include(`jupiter status ${APP}`);
    expect(old.filter(isAlive), 'the replaced runners').to.deep.equal([]);
    const st = JSON.parse((await box.ok(['status', APP, '--json'])).stdout) as { deployment: { runId: string; appDir: string } };
    expect(st.deployment.runId).to.not.equal(runId);
    expect(box.runners(APP).map((s) => s.runnerPid).filter(isAlive)).to.have.length(3);
    // Deployed again for the tests below.
    const again = await box.ok(['deploy', appDir, '--runtime', 'process', '--wait', '--json'], { timeoutMs: 110_000 });
    runId = (JSON.parse(again.stdout) as { deployment: { runId: string } }).deployment.runId;
  });

  it('11: a second item of one job gets its own file, and the submit table names that file, not the first item\'s', async () => {
    const out = (JSON.parse((await box.ok(['status', APP, '--json'])).stdout) as { deployment: { outputDir: string } }).deployment.outputDir;
    expect(readdirSync(out)).to.deep.equal(['0s_t1.txt']);
    mkdirSync(join(box.cwd, 'again'));
    const input = join(box.cwd, 'again', '0s.txt');
    writeFileSync(input, 'again\n');
    const r = await box.ok(['submit', APP, input, '--wait']);
    const item = /^(\S+)\t0s\.txt$/m.exec(r.stdout)?.[1];
    expect(item, r.stdout).to.be.a('string').and.not.equal('0s');
    const file = `0s_t1.txt.${item!}`;
    const esc = (t: string): string => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(r.stdout, 'the table row of the new item').to.match(new RegExp(`│\\s*${esc(item!)}\\s*│.*│\\s*${esc(file)}\\s*│`));
    expect(r.stdout).to.include(`outputs: ${out}`);
    expect(readdirSync(out).sort()).to.deep.equal(['0s_t1.txt', file]);
    expect(readFileSync(join(out, file), 'utf8')).to.equal('again\nt0\nt1\n');
    expect(readFileSync(join(out, '0s_t1.txt'), 'utf8')).to.equal('sample\nt0\nt1\n');
  });

  it('3 and 4: `teardown <folder path>` removes it; new subscribers get none of its retained topics', async () => {
    const hub = box.stack().hub!;
    const before = await retainedOf(hub, APP);
    expect(before).to.include(`jupiter/${APP}/mapping`);
    expect(before).to.include(`jupiter/${APP}/tasks/t0`);

    // `status` takes the folder path too (the same resolver as deploy).
    expect((await box.ok(['status', appDir, '--json'])).stdout).to.include(runId);
    const pids = box.runners(APP).map((s) => s.runnerPid);
    const r = await box.ok(['teardown', appDir]);
    expect(r.stdout).to.match(/removed process runner t0@node\d/);
    expect(r.stdout).to.match(new RegExp(`removed \\d+ Redis key\\(s\\) of ${APP}`));
    expect(pids.filter(isAlive), 'runners still alive').to.deep.equal([]);
    const st = await box.run(['status', APP]);
    expect(st.code).to.equal(2);
    expect(st.stderr).to.include(`${APP} is not deployed`);

    // The hub notices within a poll or two; then every fresh subscriber gets nothing of the app.
    const after = await until(async () => {
      const got = await retainedOf(hub, APP);
      return got.length === 0 ? got : undefined;
    }, 15_000, 'the retained topics of the torn-down app to be cleared');
    expect(after).to.deep.equal([]);
  });

  it('2: with the stack\'s Redis gone, teardown still removes the runners the state folder records', async () => {
    await box.ok(['deploy', appDir, '--runtime', 'process'], { timeoutMs: 110_000 });
    const pids = box.runners(APP).map((s) => s.runnerPid);
    expect(pids).to.have.length(3);
    const redisPid = box.stack().redis!.pid;
    killPid(redisPid);
    await until(() => !isAlive(redisPid), 10_000, 'redis-server to exit');
    const r = await box.ok(['teardown', APP]);
    expect(r.stderr).to.include(`removing the runners the state folder records (Redis keys of ${APP} stay)`);
    expect(r.stdout).to.match(/removed process runner t0@node\d/);
    expect(pids.filter(isAlive), 'runners still alive').to.deep.equal([]);
  });
});
