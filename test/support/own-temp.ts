// Issue 15, point 12: tests kept `jupiter-map-*` folders and dashboard PNGs in the system temp
// folder. A suite that makes such things runs with a fresh temp folder of its own (TMPDIR, which
// os.tmpdir() reads on every call and every child process inherits: the CLI, Chromium) and must
// leave it empty. Checked in the suite itself rather than by running it again in a child mocha.
import { expect } from 'chai';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Register the suite's first before() (TMPDIR := a fresh folder) and its after(): `cleanup` (the
 * suite's own tear-down, which must run before the check), then TMPDIR back, then the folder must
 * be empty. Call it before the suite's other hooks.
 */
export function ownTempFolder(cleanup: () => void | Promise<void> = () => undefined): void {
  let dir = '';
  let saved: string | undefined;
  before(() => {
    saved = process.env.TMPDIR;
    dir = mkdtempSync(join(tmpdir(), 'jupiter-tmpdir-'));
    process.env.TMPDIR = dir;
  });
  after(async () => {
    try {
      await cleanup();
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
    const left = readdirSync(dir);
    // What a kept folder holds says which step did not finish (a runner's work, a store, the app).
    const inside = left.length ? `: ${(readdirSync(dir, { recursive: true }) as string[]).slice(0, 30).join(', ')}` : '';
    rmSync(dir, { recursive: true, force: true });
    expect(left, `left in the temp folder${inside}`).to.deep.equal([]);
  });
}
