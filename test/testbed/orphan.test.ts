// A testbed whose folder was deleted (its state, stack state, cluster configuration and logs with
// it) is still found and taken down by id: `up` keeps a copy of its state in its run root. The
// real CLI on a 2-host testbed; skipped (reason printed) where namespaces or engines cannot be made.
import { expect } from 'chai';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CliSandbox } from '../support/faults.js';
import { checkTestbedHost } from '../../orchestrator/testbed/preflight.js';
import type { TestbedState } from '../../orchestrator/testbed/state.js';
import { leftovers } from './leftovers.js';

describe('jupiter testbed down --id: a testbed whose folder was deleted (real CLI)', function () {
  this.timeout(240_000);
  let box: CliSandbox | undefined;
  let state: TestbedState | undefined;
  const tbDir = () => join(box!.cwd, 'gone');

  before(function () {
    try {
      checkTestbedHost();
    } catch (e) {
      console.log(`      SKIPPED: ${(e as Error).message}`);
      this.skip();
    }
    box = new CliSandbox(`jtb-orphan-${process.pid}-`);
  });

  after(async () => {
    // A failed test still takes it down, by id (its folder is gone by then).
    if (box && state && existsSync(join(state.runRoot, 'testbed.json'))) await box.run(['testbed', 'down', '--id', state.id], { timeoutMs: 120_000 });
    await box?.dispose();
  });

  it('up keeps a copy of its state in its run root; with the folder deleted, status names it and the command that removes it', async () => {
    await box!.ok(['testbed', 'up', 'mesh-2', '--dir', 'gone'], { timeoutMs: 200_000 });
    state = JSON.parse(readFileSync(join(tbDir(), 'testbed.json'), 'utf8')) as TestbedState;
    expect(JSON.parse(readFileSync(join(state.runRoot, 'testbed.json'), 'utf8'))).to.deep.equal(state);
    rmSync(tbDir(), { recursive: true, force: true });
    const st = await box!.run(['testbed', 'status', '--dir', 'gone']);
    expect(st.code).to.equal(2);
    expect(st.stderr).to.include(`mesh-2 (jtb${state.id}, made in ${tbDir()}): \`jupiter testbed down --id ${state.id}\``);
    const wrong = await box!.run(['testbed', 'down', '--id', 'nosuch']);
    expect(wrong.code).to.equal(2);
    expect(wrong.stderr).to.match(/no testbed jtbnosuch on this machine/);
    expect(wrong.stderr).to.include(`${state.id} (mesh-2, ${tbDir()})`);
    const both = await box!.run(['testbed', 'down', '--id', state.id, '--dir', 'gone']);
    expect(both.code).to.equal(2);
    expect(both.stderr).to.match(/--dir or --id, not both/);
  });

  it('`testbed down --id` removes it all: engines and containers, the hub its stack state no longer names, Redis, network, folders', async () => {
    const r = await box!.ok(['testbed', 'down', '--id', `jtb${state!.id}`], { timeoutMs: 150_000 });
    expect(r.stdout).to.match(/killed 1 process\(es\) of the testbed's stack that its state did not name \(its hub\)/);
    expect(r.stdout).to.include(`removed bridge jtb${state!.id}br`);
    expect(r.stdout).to.include(`its folder ${tbDir()} was gone already`);
    const left = leftovers(state!, tbDir());
    expect(left, `left after down:\n${left.join('\n')}\n`).to.deep.equal([]);
  });
});
