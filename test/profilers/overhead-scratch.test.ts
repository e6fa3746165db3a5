// The probes' scratch folders of an agent killed mid-probe are removed by the next agent's prober
// (profilers/overhead/scratch-dir.ts); a live process's are kept.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { scratchDir, sweepScratchDirs } from '../../profilers/overhead/scratch-dir.js';

describe('profilers: scratch folders of probes whose agent died', () => {
  let dir = '';
  before(() => (dir = mkdtempSync(join(tmpdir(), 'jscratch-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('removes the folders of pids that no longer run, keeps a live one\'s and anything else', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    const mk = (name: string): string => {
      mkdirSync(join(dir, name, 'work'), { recursive: true });
      writeFileSync(join(dir, name, 'work', 'f'), 'x');
      return name;
    };
    const gone = [mk(`jupiter-taskprobe-${dead}-AbC123`), mk(`jupiter-hopprobe-${dead}-xYz789`), mk(`jupiter-overhead-${dead}-q1w2e3`)];
    const kept = [mk(`jupiter-taskprobe-${process.pid}-AbC123`), mk(`jupiter-taskprobe-AbC123`), mk(`jupiter-other-${dead}-AbC123`), mk('unrelated')];
    const removed = await sweepScratchDirs(dir);
    expect(removed.map((p) => basename(p)).sort()).to.deep.equal([...gone].sort());
    expect(readdirSync(dir).sort()).to.deep.equal([...kept].sort());
  });

  it('names a new folder after its kind and this process', async () => {
    const d = await scratchDir('hopprobe');
    try {
      expect(basename(d)).to.match(new RegExp(`^jupiter-hopprobe-${process.pid}-[A-Za-z0-9]{6}$`));
      expect(await sweepScratchDirs(tmpdir())).to.not.include(d);
      expect(existsSync(d)).to.equal(true);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
