// Apps in the original Jupiter's format run unchanged on both runtimes (issue 14), through the
// real CLI. The fixture test/fixtures/original/ojoin (written for these tests, in the original's
// format) has: an entry task with NUM_INPUTS 2 fed two files of a job by the home; a child of one
// FLAG-true parent that sends two files per job (NUM_INPUTS 2); a join of a FLAG-true and a
// FLAG-false parent; the `datasink1` sink name; scripts that open /centralized_scheduler/... and
// run a shell script there by path (committed without its executable bit, as copies often are);
// a helper in a sub-folder with arguments; extra config.json keys; a repeated name_convert.txt
// task; an input_node.txt node the cluster lacks; an empty sample_input/. Submitted files that
// share a job prefix are one item; a job whose files can never reach NUM_INPUTS is a dead letter.
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
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
function env(task: string, flag: boolean): string {
  return `TASK=${task} INPUTNUM=2 FLAG=${flag} NODE_SET=True cwd=${CENTRALIZED} file=${CENTRALIZED}/${task}.py shape=True suffix=read from ${CENTRALIZED}\n`;
}

/** What merge delivers for job j, computed from the fixture's task code. */
function expectedMerged(j: string): string {
  const part1 = env('split', true) + `job ${j} a\n`;
  const part2 = env('split', true) + `job ${j} b\n`;
  const left = env('left', true) + part1 + part2 + 'stamped-by-left\n';
  const right = env('right', false) + part2 + part1;
  return env('merge', false) + left + right;
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

function runsUnchanged(runtime: 'process' | 'docker', workDir: () => WorkDir): void {
  let w: WorkDir;
  let outputDir = '';
  let submitOut = { stdout: '', stderr: '' };
  let deployErr = '';

  before(async () => {
    w = workDir();
    const d = await w.expectCli(['deploy', appDir, '--runtime', runtime, '--wait'], 0, 220_000);
    deployErr = d.stderr;
    outputDir = parseDeployOutput(d.stdout).outputDir;
    // Job 9 has one file only: the entry task (NUM_INPUTS 2) can never run for it.
    const files = ['7_a.txt', '7_b.txt', '8_b.txt', '8_a.txt', '9_a.txt'].map((name) => {
      const [job, part] = name.replace('.txt', '').split('_');
      writeFileSync(join(w.dir, name), `job ${job} ${part}\n`);
      return join(w.dir, name);
    });
    submitOut = await w.expectCli(['submit', APP, ...files, '--wait', '--timeout', '90'], 0, 120_000);
  });

  it('deploys with an empty sample_input/, warning (not failing) about the input_node.txt node', () => {
    expect(deployErr).to.include(`no sample inputs: ${APP} runs and waits for input`);
    expect(deployErr).to.match(/input_node\.txt:2: warning: input_node\.txt puts split on unknown node node9/);
  });

  it('submits files sharing a job prefix as one item, and says which items were dead-lettered', () => {
    expect(submitOut.stdout).to.match(/^7\t7_a\.txt 7_b\.txt$/m);
    expect(submitOut.stdout).to.match(/^8\t8_b\.txt 8_a\.txt$/m);
    expect(submitOut.stdout).to.match(/^9\t9_a\.txt$/m);
    expect(submitOut.stderr).to.include('✖ Waiting for outputs — 2 done, 1 dead-lettered (join short of NUM_INPUTS) of 3');
  });

  it('delivers exactly the expected files, flat, with the original\'s task environment in them', () => {
    expect(readdirSync(outputDir).sort()).to.deep.equal(['7_merged.txt', '8_merged.txt']);
    for (const j of ['7', '8']) expect(readFileSync(join(outputDir, `${j}_merged.txt`), 'utf8'), j).to.equal(expectedMerged(j));
  });

  it('names the task, the job and the files that arrived in the dead letter of the short job', async () => {
    const st = await statusJson(w, APP);
    expect(st.status.deadLetterCount).to.equal(1);
    const [letter] = (st.status as unknown as { deadLetters: Array<Record<string, unknown>> }).deadLetters;
    expect(letter).to.include({ task: 'split', item: '9', file: '9_a.txt', from: 'home' });
    expect(String(letter!.error)).to.equal('job 9 can never reach NUM_INPUTS 2 at task split: 1 file(s) arrived (9_a.txt) and no more of the job are in flight');
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
  runsUnchanged('process', () => (w = new WorkDir()));
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
  runsUnchanged('docker', () => (w = new WorkDir({ DOCKER_HOST: `unix://${engine!.socketPath}` })));
});
