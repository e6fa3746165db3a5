// Work slots: every item starts with empty folders, whatever the last one left there. On tmpfs
// the reset trusts the folder's size after removing the files it knows of; elsewhere it lists.
import { expect } from 'chai';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appWorkDir, openSlots, pruneAppWork, taskWorkDir } from '../../circe/runner/work-slots.js';

const roots: Array<[string, string]> = [['a disk folder', tmpdir()]];
if (existsSync('/dev/shm')) roots.push(['tmpfs (/dev/shm)', '/dev/shm']);

for (const [label, root] of roots) {
  describe(`work slots on ${label}`, () => {
    let parent: string;
    beforeEach(() => {
      parent = mkdtempSync(join(root, 'jupiter-slots-'));
    });
    afterEach(() => rmSync(parent, { recursive: true, force: true }));

    const empty = (dir: string): string[] => readdirSync(dir);

    it('removes the inputs it wrote and the outputs the task returned', () => {
      const [slot] = openSlots(parent, 1);
      const inp = join(slot!.pathin, 'a.txt');
      const out = join(slot!.pathout, 'b.txt');
      writeFileSync(inp, 'a');
      writeFileSync(out, 'b');
      slot!.known.push(inp, out);
      slot!.reset();
      expect(empty(slot!.pathin)).to.deep.equal([]);
      expect(empty(slot!.pathout)).to.deep.equal([]);
      expect(slot!.known).to.deep.equal([]);
    });

    it('removes what the task left unsaid: extra files and folders in both', () => {
      const [slot] = openSlots(parent, 1);
      const inp = join(slot!.pathin, 'a.txt');
      writeFileSync(inp, 'a');
      writeFileSync(join(slot!.pathin, 'scratch'), 'x');
      mkdirSync(join(slot!.pathout, 'sub', 'deeper'), { recursive: true });
      writeFileSync(join(slot!.pathout, 'sub', 'deeper', 'f'), 'y');
      writeFileSync(join(slot!.pathout, 'unreturned.txt'), 'z');
      slot!.known.push(inp);
      slot!.reset();
      expect(empty(slot!.pathin)).to.deep.equal([]);
      expect(empty(slot!.pathout)).to.deep.equal([]);
    });

    it('copes with a known input the task moved away, and leaves files outside the slot alone', () => {
      const [slot] = openSlots(parent, 1);
      const inp = join(slot!.pathin, 'a.txt');
      const out = join(slot!.pathout, 'a.txt');
      const outside = join(parent, 'keep.txt');
      writeFileSync(inp, 'a');
      writeFileSync(outside, 'k');
      renameSync(inp, out);
      slot!.known.push(inp, out, outside);
      slot!.reset();
      expect(empty(slot!.pathin)).to.deep.equal([]);
      expect(empty(slot!.pathout)).to.deep.equal([]);
      expect(existsSync(outside)).to.equal(true);
    });

    it('empties the folders item after item', () => {
      const [slot] = openSlots(parent, 1);
      for (let i = 0; i < 5; i++) {
        const inp = join(slot!.pathin, `in-${i}`);
        const out = join(slot!.pathout, `out-${i}`);
        writeFileSync(inp, 'a');
        writeFileSync(out, 'b');
        if (i % 2 === 0) writeFileSync(join(slot!.pathout, `extra-${i}`), 'c');
        slot!.known.push(inp, out);
        slot!.reset();
        expect(empty(slot!.pathin), `item ${i}`).to.deep.equal([]);
        expect(empty(slot!.pathout), `item ${i}`).to.deep.equal([]);
      }
    });
  });
}

describe('work folders after teardown (pruneAppWork)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'jupiter-prune-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('removes the slots of dead runners and the emptied task and app folders', () => {
    const t0 = taskWorkDir(root, 'my app', 't0');
    // pid 2^22+1 is above Linux's pid_max: no such process.
    mkdirSync(join(t0, '4194305-0-s0', 'input'), { recursive: true });
    writeFileSync(join(t0, '4194305-0-s0', 'input', 'x'), 'x');
    mkdirSync(taskWorkDir(root, 'my app', 't1'), { recursive: true });
    expect(pruneAppWork(root, 'my app')).to.equal(true);
    expect(existsSync(appWorkDir(root, 'my app'))).to.equal(false);
    expect(existsSync(join(root, 'jupiter-work'))).to.equal(true);
  });

  it('keeps the slots of live processes and their parents; nothing to do for an unknown app', () => {
    const t0 = taskWorkDir(root, 'app', 't0');
    const [slot] = openSlots(t0, 1);
    mkdirSync(taskWorkDir(root, 'app', 't1'), { recursive: true });
    expect(pruneAppWork(root, 'app')).to.equal(false);
    expect(existsSync(slot!.pathin)).to.equal(true);
    expect(existsSync(taskWorkDir(root, 'app', 't1'))).to.equal(false);
    slot!.remove();
    expect(pruneAppWork(root, 'app')).to.equal(true);
    expect(pruneAppWork(root, 'other')).to.equal(false);
  });
});
