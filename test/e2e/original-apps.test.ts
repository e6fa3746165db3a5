// Apps in the original Jupiter's format run unchanged on both runtimes (issue 14), through the
// real CLI. The fixture test/fixtures/original/ojoin (written for these tests, in the original's
// format) has: an entry task with NUM_INPUTS 2 fed two files of a job by the home; a child of one
// FLAG-true parent that sends two files per job (NUM_INPUTS 2); a join of a FLAG-true and a
// FLAG-false parent; the `datasink1` sink name; scripts that open /centralized_scheduler/... and
// run a shell script there by path (committed without its executable bit, as copies often are);
// a helper in a sub-folder with arguments; extra config.json keys; a repeated name_convert.txt
// task; an input_node.txt node the cluster lacks; an empty sample_input/. Submitted files that
// share a job prefix are one item; a job whose files can never reach NUM_INPUTS is a dead letter
// (at the entry task, and mid-pipeline when a FLAG-true parent sends fewer files than its child
// waits for); a job whose task raises is failed; the wait line tells the three apart. The
// docker-runtime run deploys a copy whose sample_input/ holds two files of one job (one item, the
// original's rule where files enter); the process-runtime run keeps the empty sample_input/. Job
// grouping happens in the CLI before any runtime is involved, so each case is run once, not twice.
import { expect } from 'chai';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys } from '../../circe/queue/keys.js';
import { CENTRALIZED } from '../../circe/compat/centralized.js';
import { DEFAULT_PREFIX } from '../../config/redis-keys.js';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import { fixturesDir } from '../support/paths.js';
import { parseDeployOutput, sleep, statusJson, WorkDir } from './workdir.js';

const APP = 'ojoin';
const appDir = join(fixturesDir, 'original', APP);

/** The environment line each fixture task writes first (see scripts/common.py). */
function env(task: string, flag: boolean, children: string): string {
  return `TASK=${task} INPUTNUM=2 FLAG=${flag} CHILD_NODES=${children} HOME_NODE=home NODE_SET=True cwd=${CENTRALIZED} file=${CENTRALIZED}/${task}.py shape=True suffix=read from ${CENTRALIZED}\n`;
}

/** What merge delivers for job j, computed from the fixture's task code. */
function expectedMerged(j: string): string {
  const part1 = env('split', true, 'left:right') + `job ${j} a\n`;
  const part2 = env('split', true, 'left:right') + `job ${j} b\n`;
  const left = env('left', true, 'merge') + part1 + part2 + 'stamped-by-left\n';
  const right = env('right', false, 'merge') + part2 + part1;
  return env('merge', false, 'home') + left + right;
}

async function helperExitCode(w: WorkDir): Promise<string | null> {
  const redis = connectRedis(w.stack().redis!.url);
  try {
    for (let i = 0; i < 100; i++) {
      const code = await redis.hget(appKeys(DEFAULT_PREFIX, APP).helper('note'), 'exitCode');
      if (code !== null) return code;
      await sleep(100);
    }
    return null;
  } finally {
    redis.disconnect();
  }
}

function runsUnchanged(runtime: 'process' | 'docker', samples: boolean, workDir: () => WorkDir): void {
  let w: WorkDir;
  let outputDir = '';
  let submitOut = { stdout: '', stderr: '' };
  let deploy = { stdout: '', stderr: '' };
  let copy: string | undefined;
  // Delivered by the deploy itself (sample inputs), then by the submit.
  const delivered = samples ? ['4', '7', '8'] : ['7', '8'];

  after(() => {
    if (copy) rmSync(copy, { recursive: true, force: true });
  });

  before(async () => {
    w = workDir();
    let dir = appDir;
    if (samples) {
      copy = mkdtempSync(join(tmpdir(), 'jupiter-ojoin-'));
      dir = join(copy, APP);
      cpSync(appDir, dir, { recursive: true });
      for (const [name, text] of [['4_b.txt', 'job 4 b\n'], ['4_a.txt', 'job 4 a\n']] as const) writeFileSync(join(dir, 'sample_input', name), text);
    }
    // One attempt: the crashing job fails at once instead of after two retries' backoff.
    deploy = await w.expectCli(['deploy', dir, '--runtime', runtime, '--wait', '--attempts', '1'], 0, 220_000);
    outputDir = parseDeployOutput(deploy.stdout).outputDir;
    // Job 9 has one file only: the entry task (NUM_INPUTS 2) can never run for it. Job 6 has an
    // empty file: split sends left and right one file each, short of their NUM_INPUTS 2. Job 5
    // makes split raise.
    const content = (job: string, part: string): string => (job === '6' && part === 'b' ? '' : job === '5' && part === 'b' ? 'crash\n' : `job ${job} ${part}\n`);
    const files = ['7_a.txt', '7_b.txt', '8_b.txt', '8_a.txt', '9_a.txt', '6_a.txt', '6_b.txt', '5_a.txt', '5_b.txt'].map((name) => {
      const [job, part] = name.replace('.txt', '').split('_') as [string, string];
      writeFileSync(join(w.dir, name), content(job, part));
      return join(w.dir, name);
    });
    submitOut = await w.expectCli(['submit', APP, ...files, '--wait', '--timeout', '90'], 0, 120_000);
  });

  if (samples) {
    it('deploys, feeding sample inputs that share a job prefix as one item, warning (not failing) about the input_node.txt node', () => {
      expect(deploy.stderr).to.match(/input_node\.txt:2: warning: input_node\.txt puts split on unknown node node9/);
      expect(deploy.stderr).to.match(/✔ Waiting for the outputs of 1 item\(s\) — 1 done of 1/);
      expect(parseDeployOutput(deploy.stdout).items.map((i) => [i.item, i.state, i.outputs])).to.deep.equal([['4', 'done', '4_merged.txt']]);
    });
  } else {
    it('deploys with an empty sample_input/, warning (not failing) about the input_node.txt node', () => {
      expect(deploy.stderr).to.include(`no sample inputs: ${APP} runs and waits for input`);
      expect(deploy.stderr).to.match(/input_node\.txt:2: warning: input_node\.txt puts split on unknown node node9/);
    });
  }

  it('submits files sharing a job prefix as one item, and says which items were done, failed and dead-lettered', () => {
    expect(submitOut.stdout).to.match(/^7\t7_a\.txt 7_b\.txt$/m);
    expect(submitOut.stdout).to.match(/^8\t8_b\.txt 8_a\.txt$/m);
    expect(submitOut.stdout).to.match(/^9\t9_a\.txt$/m);
    expect(submitOut.stdout).to.match(/^6\t6_a\.txt 6_b\.txt$/m);
    expect(submitOut.stderr).to.include('✖ Waiting for outputs — 2 done, 1 failed, 2 dead-lettered (join short of NUM_INPUTS) of 5');
  });

  it('delivers exactly the expected files, flat, with the original\'s task environment in them', () => {
    expect(readdirSync(outputDir).sort()).to.deep.equal(delivered.map((j) => `${j}_merged.txt`));
    for (const j of delivered) expect(readFileSync(join(outputDir, `${j}_merged.txt`), 'utf8'), j).to.equal(expectedMerged(j));
  });

  it('names the task, the job and the files that arrived in the dead letters of the short joins, at the entry and mid-pipeline', async () => {
    const st = await statusJson(w, APP);
    const letters = (st.status as unknown as { deadLetters: Array<Record<string, unknown>> }).deadLetters;
    const short = letters.filter((l) => String(l.error).includes('can never reach')).sort((a, b) => `${String(a.item)}${String(a.task)}`.localeCompare(`${String(b.item)}${String(b.task)}`));
    expect(short.map((l) => [l.task, l.item, l.file, l.from])).to.deep.equal([
      ['left', '6', '6_part1.txt', 'split'],
      ['right', '6', '6_part1.txt', 'split'],
      ['split', '9', '9_a.txt', 'home'],
    ]);
    expect(short.map((l) => String(l.error))).to.deep.equal([
      'job 6 can never reach NUM_INPUTS 2 at task left: 1 file(s) arrived (6_part1.txt) and no more of the job are in flight',
      'job 6 can never reach NUM_INPUTS 2 at task right: 1 file(s) arrived (6_part1.txt) and no more of the job are in flight',
      'job 9 can never reach NUM_INPUTS 2 at task split: 1 file(s) arrived (9_a.txt) and no more of the job are in flight',
    ]);
    // The failed job is a dead letter of its own kind: the task's error, after its attempts.
    const crashed = letters.filter((l) => l.item === '5');
    expect(crashed.map((l) => l.task)).to.deep.equal(['split']);
    expect(String(crashed[0]!.error)).to.include('job 5: 5_b.txt asks for a crash');
    expect(st.status.deadLetterCount).to.equal(4);
  });

  it('runs the helper in its sub-folder once, with its arguments and the original environment', async () => {
    expect(await helperExitCode(w)).to.equal('0');
  });

}

describe('e2e: an app in the original Jupiter format, unchanged, on the process runtime', function () {
  this.timeout(300_000);
  let w: WorkDir | undefined;
  // The empty mount point is what the process runtime leaves on the host: removed if we made it.
  const hadMountPoint = existsSync(CENTRALIZED);
  after(async () => {
    await w?.dispose([APP]);
    if (!hadMountPoint && existsSync(CENTRALIZED) && readdirSync(CENTRALIZED).length === 0) rmdirSync(CENTRALIZED);
  });
  before(function () {
    if (process.getuid?.() !== 0) {
      console.log('      skipped: the process runtime needs root for a private /centralized_scheduler');
      this.skip();
    }
  });
  runsUnchanged('process', false, () => (w = new WorkDir()));
});

describe('e2e: an app in the original Jupiter format, unchanged, on the docker runtime', function () {
  this.timeout(400_000);
  let engine: TestDockerd | undefined;
  let w: WorkDir | undefined;
  before(async function () {
    engine = await startDockerdOrSkip(this);
  });
  after(async () => {
    await w?.dispose([APP]);
    await engine?.stop();
  });
  runsUnchanged('docker', true, () => (w = new WorkDir({ DOCKER_HOST: `unix://${engine!.socketPath}` })));
});
