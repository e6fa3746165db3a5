// JavaScript and TypeScript tasks are timed in a process of their own (profilers/exec/js-timing*.ts),
// not in the agent's: the jsline fixture (a.mjs -> b.ts -> c.js) with its tasks changed to say
// where they ran, to end their process, or to throw.
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import { profileApp } from '../../profilers/exec/profile-app.js';
import { fixtureAppDir } from '../circe/support.js';

/** A task of jsline's shape (one input, one output) whose body runs `before` first. */
const script = (before: string): string => `import { readFile, writeFile, appendFile } from 'node:fs/promises';
import { join } from 'node:path';
export async function task(inputs, pathin, pathout) {
  ${before}
  const [name] = inputs;
  const body = await readFile(join(pathin, name), 'utf8');
  const out = join(pathout, name.split('.')[0] + '_x.txt');
  await writeFile(out, body + 'x\\n');
  return [out];
}
`;

describe('profilers: JavaScript tasks are timed in a process of their own (js-timing.ts)', function () {
  this.timeout(60_000);
  let root = '';
  let n = 0;
  /** A copy of jsline with script `file` replaced. */
  const app = (file: string, body: string): string => {
    const dir = join(root, `jsline${n++}`);
    cpSync(fixtureAppDir('jsline'), dir, { recursive: true });
    writeFileSync(join(dir, 'scripts', file), body);
    return dir;
  };
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'jupiter-jstiming-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('runs every call of a task in one other process, several times, and still returns its outputs\' bytes', async () => {
    const pids = join(root, 'pids.txt');
    const dir = app('a.mjs', script(`await appendFile(${JSON.stringify(pids)}, process.pid + '\\n');`));
    const r = await profileApp(await loadApp(dir), 'node1', { workDir: root });
    expect(r.failed).to.deep.equal([]);
    expect(r.profiles.map((p) => p.task).sort()).to.deep.equal(['a', 'b', 'c']);
    const seen = readFileSync(pids, 'utf8').trim().split('\n');
    expect(seen.length).to.be.at.least(3); // a warm-up and at least two timed calls
    expect(new Set(seen).size).to.equal(1);
    expect(Number(seen[0])).to.not.equal(process.pid);
    expect(r.profiles.find((p) => p.task === 'a')!.outputBytes).to.be.greaterThan(0);
  });

  it('a task that ends its process fails its own profile; the tasks after it are skipped and the profiler lives on', async () => {
    const dir = app('b.ts', script('process.exit(3);'));
    const r = await profileApp(await loadApp(dir), 'node1', { workDir: root });
    expect(r.profiles.map((p) => p.task)).to.deep.equal(['a']);
    expect(r.failed).to.have.length(1);
    expect(r.failed[0]!.task).to.equal('b');
    expect(r.failed[0]!.reason).to.match(/ended the timing process \(exit code 3\)/);
    expect(r.skipped.map((s) => s.task)).to.deep.equal(['c']);
    // The next profile starts a new timing process.
    const again = await profileApp(await loadApp(fixtureAppDir('jsline')), 'node1', { workDir: root });
    expect(again.failed).to.deep.equal([]);
  });

  it('a task that throws fails with its message', async () => {
    const dir = app('c.js', script("throw new Error('no frame to read');"));
    const r = await profileApp(await loadApp(dir), 'node1', { workDir: root });
    expect(r.profiles.map((p) => p.task).sort()).to.deep.equal(['a', 'b']);
    expect(r.failed).to.deep.equal([{ task: 'c', reason: 'no frame to read' }]);
  });
});
