// Supervisor of one task runner (process runtime): starts `node dist/circe/runner/main.js`,
// restarts it when it dies (kill -9, crash) with a growing delay, like Docker's on-failure
// policy, and stops it on SIGTERM. One supervisor per runner keeps the failure domain small:
// a crash of one runner or its supervisor never touches the other tasks.
// Environment: the runner's JUPITER_* variables plus JUPITER_SUPERVISE_STATE (state file) and
// optionally JUPITER_RUNNER_NODE_ARGS.
import { spawn, type ChildProcess } from 'node:child_process';
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runnerNodeFlags } from './node-flags.js';

const stateFile = process.env.JUPITER_SUPERVISE_STATE;
if (!stateFile) {
  process.stderr.write('supervise: JUPITER_SUPERVISE_STATE is not set\n');
  process.exit(2);
}
const runnerMain = join(dirname(fileURLToPath(import.meta.url)), '..', 'runner', 'main.js');
const log = (msg: string): void => {
  process.stderr.write(`${new Date().toISOString()} supervisor: ${msg}\n`);
};

let child: ChildProcess | undefined;
let stopping = false;
let restarts = 0;
let failuresInRow = 0;

function writeState(): void {
  const tmp = `${stateFile}.tmp`;
  writeFileSync(tmp, JSON.stringify({
    supervisorPid: process.pid,
    runnerPid: child?.pid ?? null,
    task: process.env.JUPITER_TASK,
    node: process.env.JUPITER_NODE,
    app: process.env.JUPITER_APP,
    restarts,
    updatedAt: Date.now(),
  }));
  renameSync(tmp, stateFile!);
}

function startRunner(): void {
  const startedAt = Date.now();
  // JUPITER_RUNNER_NODE_ARGS: extra node flags for the runner (profiling, heap size); they come
  // after the defaults, so they win.
  const extra = (process.env.JUPITER_RUNNER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const c = spawn(process.execPath, ['--enable-source-maps', ...runnerNodeFlags(), ...extra, runnerMain], { stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
  child = c;
  writeState();
  c.on('exit', (code, signal) => {
    if (stopping) {
      process.exit(0);
    }
    if (code === 0) {
      log(`runner exited normally; not restarting`);
      child = undefined;
      writeState();
      process.exit(0);
    }
    failuresInRow = Date.now() - startedAt > 30_000 ? 1 : failuresInRow + 1;
    const delay = Math.min(5000, 200 * 2 ** (failuresInRow - 1));
    restarts++;
    log(`runner pid ${c.pid} died (${signal ?? `exit code ${code}`}); restart #${restarts} in ${delay} ms`);
    setTimeout(() => {
      if (!stopping) startRunner();
    }, delay);
  });
}

function stop(): void {
  if (stopping) return;
  stopping = true;
  const c = child;
  if (!c || c.exitCode !== null || c.signalCode !== null) process.exit(0);
  c.kill('SIGTERM');
  setTimeout(() => c.kill('SIGKILL'), 15_000).unref();
}

process.on('SIGTERM', stop);
process.on('SIGINT', stop);
startRunner();
