// Execution profiling reuses a task's earlier profile while its script, inputs and everything
// upstream are unchanged (inputsHash), and runs a changed task again together with the tasks
// whose outputs it needs. The pyjoin fixture: split -> left, right; left, right -> merge; left -> audit.
import { expect } from 'chai';
import { appendFileSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import type { ExecProfile } from '../../config/types.js';
import { profileApp } from '../../profilers/exec/profile-app.js';
import { fixtureAppDir } from '../circe/support.js';

describe('profilers: execution profiles reused by content', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => {
    dir = join(mkdtempSync(join(tmpdir(), 'jupiter-exec-reuse-')), 'pyjoin');
    cpSync(fixtureAppDir('pyjoin'), dir, { recursive: true });
  });
  after(() => rmSync(join(dir, '..'), { recursive: true, force: true }));
  const byTask = (ps: ExecProfile[]): Map<string, ExecProfile> => new Map(ps.map((p) => [p.task, p]));

  it('reruns nothing unchanged; a changed task reruns with the parents it needs, the rest is reused', async () => {
    const app = await loadApp(dir);
    const first = await profileApp(app, 'node1');
    expect(first.failed).to.deep.equal([]);
    expect(first.reused).to.deep.equal([]);
    const all = first.profiles.map((p) => p.task).sort();
    expect(all).to.deep.equal(['audit', 'left', 'merge', 'right', 'split']);
    expect(first.profiles.every((p) => /^[0-9a-f]{64}$/.test(p.inputsHash ?? ''))).to.equal(true);

    const again = await profileApp(app, 'node1', { reuse: byTask(first.profiles) });
    expect(again.reused.sort()).to.deep.equal(all);
    expect(again.profiles.map((p) => p.durationSec)).to.deep.equal(first.profiles.map((p) => p.durationSec));

    // audit changed: it runs, and so do left and split, which make its input; right and merge do not.
    appendFileSync(join(dir, 'scripts', 'audit.py'), '\n# changed\n');
    const changed = await profileApp(await loadApp(dir), 'node1', { reuse: byTask(again.profiles) });
    expect(changed.failed).to.deep.equal([]);
    expect(changed.reused.sort()).to.deep.equal(['merge', 'right']);
    expect(changed.profiles.map((p) => p.task).sort()).to.deep.equal(all);
    const [a0, a1] = [byTask(first.profiles).get('audit')!, byTask(changed.profiles).get('audit')!];
    expect(a1.inputsHash).to.not.equal(a0.inputsHash);
    // left's own hash did not change (only its child did).
    expect(byTask(changed.profiles).get('left')!.inputsHash).to.equal(byTask(first.profiles).get('left')!.inputsHash);

    // A module of the script folder that tasks may import: every task is measured again.
    appendFileSync(join(dir, 'scripts', 'lineage.py'), '\n# changed\n');
    const helper = await profileApp(await loadApp(dir), 'node1', { reuse: byTask(changed.profiles) });
    expect(helper.reused).to.deep.equal([]);
  });
});
