// Issue 15, point 2: containers must not be orphaned by `teardown`. A docker deployment made with
// a JUPITER_CONFIG naming a private engine is torn down from a shell without it: the deployment
// record names its engines, so teardown reaches them. While that engine cannot be reached,
// `teardown --stack` says which engine (exit 1), keeps the record and keeps the stack up; once it
// can, the same command removes the containers and stops the stack.
import { expect } from 'chai';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LABEL_APP } from '../../circe/runtime/docker-container.js';
import { isAlive } from '../../circe/runtime/pid.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import type { TestDockerd } from '../support/dockerd.js';
import { CliSandbox, writeChainApp } from '../support/faults.js';

const APP = 'orphans';

describe('teardown reaches the engines a docker deployment recorded (issue 15, point 2)', function () {
  this.timeout(300_000);
  let engine: TestDockerd | undefined;
  const box = new CliSandbox('jupiter-orphans-');
  let hidden = false;

  before(async function () {
    // Our own engine (never a shared one): the test hides its socket for a while.
    engine = await startDockerdOrSkip(this, { useExisting: false });
  });

  after(async () => {
    if (hidden && engine) renameSync(`${engine.socketPath}.away`, engine.socketPath);
    await box.dispose(APP);
    await engine?.stop();
  });

  const containers = async (): Promise<string[]> =>
    (await engine!.docker.listContainers({ all: true, filters: { label: [`${LABEL_APP}=${APP}`] } })).map((c) => c.Names[0] ?? c.Id);

  it('deploys with a JUPITER_CONFIG, then tears down without it: loudly while the engine is away, completely once it is back', async () => {
    const sock = engine!.socketPath;
    writeFileSync(join(box.cwd, 'lab.json'), JSON.stringify({
      runtime: 'docker',
      nodes: ['home', 'node1', 'node2', 'node3'].map((name) => ({ name, host: '127.0.0.1', docker: `unix://${sock}` })),
    }));
    const appDir = writeChainApp(box.cwd, APP, { tasks: 2 });
    const t0 = Date.now();
    await box.ok(['deploy', appDir, '--wait'], { env: { JUPITER_CONFIG: 'lab.json' }, timeoutMs: 280_000 });
    console.log(`      docker deploy with a private engine: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    expect(await containers()).to.have.length(2);
    const redisPid = box.stack().redis!.pid;

    // The engine cannot be reached (its socket moved away): teardown says so and stops nothing.
    renameSync(sock, `${sock}.away`);
    hidden = true;
    const away = await box.run(['teardown', APP, '--stack']);
    expect(away.code, away.stdout + away.stderr).to.equal(1);
    expect(away.stderr).to.include(`teardown of ${APP} is incomplete`);
    expect(away.stderr).to.include(`unix://${sock}`);
    expect(away.stderr).to.include('the stack stays up');
    expect(isAlive(redisPid), 'the stack was stopped under running containers').to.equal(true);
    renameSync(`${sock}.away`, sock);
    hidden = false;
    expect(await containers()).to.have.length(2);

    // Back: the same command (still without JUPITER_CONFIG) removes them and stops the stack.
    const back = await box.ok(['teardown', APP, '--stack']);
    expect(back.stdout.match(/removed container /g), back.stdout).to.have.length(2);
    expect(back.stdout).to.include(`on unix://${sock}`);
    expect(back.stdout).to.match(/stopped redis-server/);
    expect(await containers()).to.deep.equal([]);
    expect(isAlive(redisPid)).to.equal(false);
  });
});
