// What `testbed down` does about processes an engine left behind: found by the folders on their
// command lines and killed with everything below them; a cgroup with processes still in it is
// emptied and removed. Real processes and, as root, a real cgroup.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive } from '../../circe/runtime/pid.js';
import { until } from '../support/faults.js';
import { cgroupDirs, removeCgroup } from '../../orchestrator/testbed/engines.js';
import { killProcessesUnder, processCmdlines, withDescendants } from '../../orchestrator/testbed/procs.js';

const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

describe('testbed down: what an engine left running', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'jtb-procs-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('withDescendants: the roots and every process below them, nothing beside', () => {
    const parents = new Map([[10, 1], [11, 10], [12, 11], [13, 10], [20, 1], [21, 20]]);
    expect(withDescendants([10], parents).sort()).to.deep.equal([10, 11, 12, 13]);
    expect(withDescendants([11, 21], parents).sort()).to.deep.equal([11, 12, 21]);
    expect(withDescendants([99], parents)).to.deep.equal([99]);
  });

  it('kills a process that names the folder and its children (whose command lines do not); a sibling folder is spared', async () => {
    const folder = join(dir, 'node1');
    const shim = spawn('sh', ['-c', 'sleep 60 & sleep 60 & wait', folder], { stdio: 'ignore' });
    const other = spawn('sh', ['-c', 'sleep 60', `${folder}0/x`], { stdio: 'ignore' });
    try {
      await until(() => childrenOf(shim.pid!).length === 2, 5000, 'the two sleeps');
      const sleeps = childrenOf(shim.pid!);
      expect(processCmdlines().find((p) => p.pid === sleeps[0])!.cmd).to.not.include(folder);
      const killed = await killProcessesUnder([folder]);
      expect(killed.sort()).to.deep.equal([shim.pid!, ...sleeps].sort());
      for (const pid of killed) expect(isAlive(pid), `pid ${pid}`).to.equal(false);
      expect(isAlive(other.pid), 'the process of node10').to.equal(true);
      expect(await killProcessesUnder([join(dir, 'nothing-here')])).to.deep.equal([]);
    } finally {
      shim.kill('SIGKILL');
      other.kill('SIGKILL');
    }
  });

  it('removes a cgroup that still has a process in it (as root, cgroup v1 or v2)', async function () {
    const name = `jtbtest${process.pid}`;
    const v1 = '/sys/fs/cgroup/cpu';
    const parent = existsSync(join(v1, 'cgroup.procs')) ? v1 : '/sys/fs/cgroup';
    const cg = join(parent, name, 'container1');
    try {
      mkdirSync(cg, { recursive: true });
    } catch (e) {
      console.log(`      SKIPPED: cannot create a cgroup (${(e as Error).message})`);
      this.skip();
    }
    const proc = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      writeFileSync(join(cg, 'cgroup.procs'), String(proc.pid));
      expect(cgroupDirs(name)).to.not.deep.equal([]);
      expect(await removeCgroup(name)).to.equal(true);
      expect(cgroupDirs(name)).to.deep.equal([]);
      await until(() => !isAlive(proc.pid), 5000, 'the process in the cgroup to be gone');
    } finally {
      proc.kill('SIGKILL');
      await until(() => !isAlive(proc.pid), 5000, 'sleep to end').catch(() => undefined);
      for (const d of [cg, join(parent, name)]) {
        try {
          rmdirSync(d);
        } catch {
          // removed by the test
        }
      }
    }
  });
});
