// The whole mocha suite within CI's 25 minutes on a 2-core machine. Run serially it took ~24 min
// with the cores ~30% idle: most of a test file's wall time is waiting on engines, processes,
// timers and shaped links. So it runs in two phases:
//   1. alone: the network-emulation suites (testbed, namespaces), whose checks measure shaped
//      links, probe budgets and the time a cut takes to be seen; CPU taken by other tests would
//      bend those measurements. Once those checks are done (measured.ts: the testbed suite says
//      so, after its Redis restart), what is left of it only waits (a 60-s partition, a lost
//      node, a deploy), and phase 2 starts beside it;
//   2. the other files in two mocha processes at once (lanes), balanced by each file's time in
//      an earlier run (file-times.json). The files that start Docker engines share a lane: each
//      mocha process builds the base images once and seeds its later engines with them
//      (dockerd.ts), and two lanes building images at once would double the heaviest work.
// Phase 1's output streams, lane A's follows it (held until phase 1 has ended), lane B's is
// printed when it ends. The last line is the sum of all: "N passed, N failed". With --record (or
// JUPITER_TEST_RECORD=1) it also writes the measured times to test/support/file-times.json
// (commit it when files were added or got slower).
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { repoRoot } from './paths.js';
import { ALONE, balance } from './lanes.js';
import { MEASURED_DONE_ENV } from './measured.js';

const timesFile = join(repoRoot, 'test', 'support', 'file-times.json');
const distDir = join(repoRoot, 'dist');

interface Report {
  passes: number;
  failures: number;
  pending: number;
  seconds: Record<string, number>;
  failed?: Array<{ title: string; file: string; error: string }>;
}

interface LaneResult extends Report {
  name: string;
  wallSec: number;
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return testFiles(p);
    return e.name.endsWith('.test.js') ? [relative(distDir, p)] : [];
  }).sort();
}

interface MochaOptions {
  /** Output to this file (printed by the caller) instead of stdout. */
  log?: string;
  /** Output held back (buffered) until this settles, then streamed. */
  hold?: Promise<unknown>;
  env?: NodeJS.ProcessEnv;
}

/** One mocha process over `files`; its output streams to stdout unless `opts` says otherwise. */
function runMocha(name: string, files: string[], work: string, opts: MochaOptions = {}): Promise<LaneResult> {
  const reportFile = join(work, `${name}.json`);
  const t0 = Date.now();
  const { log, hold } = opts;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...files.map((f) => join('dist', f))], {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env, JUPITER_TEST_REPORT: reportFile },
      stdio: ['ignore', log || hold ? 'pipe' : 'inherit', log || hold ? 'pipe' : 'inherit'],
    });
    // Both streams into one file, which ends (and is flushed) only once mocha has exited: with
    // pipe's default, whichever stream ended first would close the file under the other.
    const out = log ? createWriteStream(log) : undefined;
    if (out) {
      child.stdout!.pipe(out, { end: false });
      child.stderr!.pipe(out, { end: false });
    }
    // Held output is kept in memory, not left in the pipe: a full pipe would block mocha.
    let held: Array<[NodeJS.WriteStream, Buffer]> | undefined;
    if (hold && !log) {
      held = [];
      for (const [from, to] of [[child.stdout!, process.stdout], [child.stderr!, process.stderr]] as const) {
        from.on('data', (chunk: Buffer) => (held ? held.push([to, chunk]) : to.write(chunk)));
      }
      void hold.then(() => {
        for (const [to, chunk] of held!) to.write(chunk);
        held = undefined;
      });
    }
    child.on('close', (code) => {
      const wallSec = Math.round((Date.now() - t0) / 1000);
      const finish = (r: LaneResult): void => {
        if (out) return void out.end(() => resolve(r));
        if (hold) return void hold.then(() => resolve(r));
        resolve(r);
      };
      if (!existsSync(reportFile)) {
        // mocha died before its reporter's end (a crash, a kill): one failure, said plainly.
        console.log(`run-suite: ${name} ended (exit ${code}) without a report`);
        finish({ name, wallSec, passes: 0, failures: 1, pending: 0, seconds: {} });
        return;
      }
      finish({ name, wallSec, ...(JSON.parse(readFileSync(reportFile, 'utf8')) as Report) });
    });
  });
}

/** Resolves when `file` exists or `ended` has settled, whichever comes first. */
async function fileOrEnd(file: string, ended: Promise<unknown>): Promise<void> {
  let over = false;
  void ended.finally(() => (over = true));
  while (!over && !existsSync(file)) await new Promise((r) => setTimeout(r, 500));
}

async function main(): Promise<void> {
  const record = process.argv.includes('--record') || process.env.JUPITER_TEST_RECORD === '1';
  const files = testFiles(join(distDir, 'test'));
  const seconds = existsSync(timesFile) ? (JSON.parse(readFileSync(timesFile, 'utf8')) as Record<string, number>) : {};
  const alone = files.filter((f) => ALONE.test(f));
  const [a, b] = balance(files.filter((f) => !ALONE.test(f)), seconds);
  const work = mkdtempSync(join(tmpdir(), 'jupiter-run-suite-'));
  const results: LaneResult[] = [];
  let startedSec = 0;
  try {
    console.log(`run-suite: phase 1, alone: ${alone.join(', ')}`);
    const t0 = Date.now();
    const measured = join(work, 'measured-done');
    const phase1 = runMocha('alone', alone, work, { env: { [MEASURED_DONE_ENV]: measured } });
    await fileOrEnd(measured, phase1);
    startedSec = Math.round((Date.now() - t0) / 1000);
    console.log(`\nrun-suite: phase 2 starts ${startedSec} s into phase 1, two lanes: A ${a.length} files, B ${b.length} files (A's output follows phase 1's, B's follows A's)\n`);
    const logB = join(work, 'laneB.log');
    const [r1, ra, rb] = await Promise.all([phase1, runMocha('lane A', a, work, { hold: phase1 }), runMocha('lane B', b, work, { log: logB })]);
    console.log('\nrun-suite: lane B');
    process.stdout.write(readFileSync(logB, 'utf8'));
    results.push(r1!, ra!, rb!);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  if (record) {
    const merged = { ...seconds, ...Object.assign({}, ...results.map((r) => r.seconds)) as Record<string, number> };
    const known = Object.fromEntries(Object.entries(merged).filter(([f]) => files.includes(f)).sort(([x], [y]) => x.localeCompare(y)));
    writeFileSync(timesFile, `${JSON.stringify(known, null, 2)}\n`);
    console.log(`run-suite: times written to ${relative(repoRoot, timesFile)}`);
  }
  console.log(`run-suite: ${results.map((r) => `${r.name} ${r.wallSec} s (${r.passes} passed, ${r.failures} failed)`).join('; ')}; the lanes started ${startedSec} s into phase 1`);
  // Failures again at the end: each lane's own list is far up in a long log.
  for (const r of results) {
    for (const f of r.failed ?? []) console.log(`run-suite: FAILED in ${r.name}: ${f.file}: ${f.title}\n${f.error.replace(/^/gm, '    ')}`);
  }
  const sum = (k: 'passes' | 'failures' | 'pending'): number => results.reduce((s, r) => s + r[k], 0);
  if (sum('pending') > 0) console.log(`${sum('pending')} skipped`);
  console.log(`${sum('passes')} passed, ${sum('failures')} failed`);
  process.exitCode = sum('failures') > 0 ? 1 : 0;
}

await main();
