// Execution profiling of an app in the original format (its scripts open files under
// /centralized_scheduler): where the scripts cannot be mounted there (no root: an agent in a
// container), each Python task is skipped with the reason, not run and failed.
import { expect } from 'chai';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import { profileApp } from '../../profilers/exec/profile-app.js';
import { ensureCentralizedMountPoint } from '../../circe/compat/centralized.js';
import { fixturesDir } from '../support/paths.js';

describe('profilers: execution profile of an original-format app without root', () => {
  it('skips every Python task with the reason (needs root), and fails none', async () => {
    // The fixture waits for `submit` (no sample input): give this copy one, so there is something to run.
    const dir = join(mkdtempSync(join(tmpdir(), 'jupiter-exec-orig-')), 'ojoin');
    cpSync(join(fixturesDir, 'original', 'ojoin'), dir, { recursive: true });
    mkdirSync(join(dir, 'sample_input'), { recursive: true });
    writeFileSync(join(dir, 'sample_input', '1_a.txt'), '1 2 3\n');
    const app = await loadApp(dir);
    const getuid = process.getuid;
    // As the agent container's uid 10001 sees it.
    process.getuid = () => 10001;
    let r;
    try {
      r = await profileApp(app, 'node1');
    } finally {
      process.getuid = getuid;
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
    expect(r.failed).to.deep.equal([]);
    expect(r.profiles).to.deep.equal([]);
    const python = app.tasks.filter((t) => t.isDag && t.language === 'python' && t.execProfiler).map((t) => t.name).sort();
    expect(python.length).to.be.greaterThan(0);
    // Each one is skipped for root (the entry task) or because its parent was.
    expect(r.skipped.map((s) => s.task).sort()).to.deep.equal(python);
    expect(r.skipped.find((s) => s.task === 'split')?.reason).to.match(/needs root/);
  });
});

describe('process runtime: an original-format app where /centralized_scheduler cannot be mounted', () => {
  it('stops deploy with an error naming the path, the tasks and the fixes', async () => {
    const app = await loadApp(join(fixturesDir, 'original', 'ojoin'));
    const getuid = process.getuid;
    process.getuid = () => 1000;
    let err: (Error & { hint?: string; file?: string }) | undefined;
    try {
      ensureCentralizedMountPoint(app);
    } catch (e) {
      err = e as typeof err;
    } finally {
      process.getuid = getuid;
    }
    expect(err?.message).to.equal('the scripts of ojoin open files under /centralized_scheduler/ (tasks split, left, right, merge, note): the process runtime mounts the scripts there in a private mount namespace per runner, which needs root');
    expect(err?.hint).to.match(/--runtime docker.*or run jupiter as root on a Linux machine with util-linux `unshare`/);
    expect(err?.file).to.match(/ojoin\/scripts$/);
  });
});
