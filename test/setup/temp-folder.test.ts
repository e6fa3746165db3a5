// Issue 15, point 12: tests kept `jupiter-map-*` folders and dashboard PNGs in the system temp
// folder. The tests that made them (jupiter map's CLI tests, the dashboard in Chromium with its
// screenshot) run here in a child mocha whose temp folder (TMPDIR) is a fresh one of their own:
// they must pass and leave it empty.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/paths.js';

describe('tests leave nothing in the system temp folder (issue 15, point 12)', function () {
  this.timeout(180_000);
  const tmp = mkdtempSync(join(tmpdir(), 'jupiter-tmpdir-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('jupiter map\'s CLI tests and the dashboard screenshot test, run with their own TMPDIR, leave it empty', async () => {
    const files = ['mappers/cli.test.js', 'dashboard/dashboard.test.js'].map((f) => join(repoRoot, 'dist', 'test', f));
    const r = await new Promise<{ code: number; out: string }>((resolve) => execFile(
      process.execPath, [join(repoRoot, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...files, '--grep', '^jupiter map |\\(aedes broker\\)'],
      { cwd: repoRoot, env: { ...process.env, TMPDIR: tmp }, timeout: 170_000, maxBuffer: 16 << 20 },
      (e, so, se) => resolve({ code: e ? (typeof (e as { code?: unknown }).code === 'number' ? (e as { code: number }).code : 1) : 0, out: `${so}${se}` }),
    ));
    expect(r.code, r.out).to.equal(0);
    expect(r.out).to.match(/[1-9]\d* passed, 0 failed/);
    expect(readdirSync(tmp), 'left in the temp folder').to.deep.equal([]);
  });
});
