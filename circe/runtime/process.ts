// Process runtime (the embedded default): every task's runner is a detached child process of
// this machine, whatever logical node it is mapped to, each wrapped by its own small supervisor
// (supervise.ts) that restarts it when it dies. State per app under <stateDir>/apps/<app>/:
//   <task>@<node>.json   supervisor pid, current runner pid, restarts
//   <task>@<node>.log    the runner's and the supervisor's output (kept after teardown)
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { inputError, runtimeError } from '../../config/errors.js';
import { runnerEnv } from '../runner/env.js';
import { CENTRALIZED, ensureCentralizedMountPoint, usesCentralized } from '../compat/centralized.js';
import { isAlive } from './pid.js';
import type { RunnerHandle, RunnerSpec, Runtime, TeardownReport } from './types.js';

interface RunnerState {
  supervisorPid: number;
  runnerPid: number | null;
  task: string;
  node: string;
  app: string;
  restarts: number;
  updatedAt: number;
}

export interface ProcessRuntimeOptions {
  /** Root of deployment outputs (default: <cwd>/runs); the sink writes to <root>/<app>/<runId>/output. */
  runsDir?: string;
  /** Seconds to wait for runners to finish their item on teardown before SIGKILL. */
  stopGraceSec?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function appStateDir(cluster: Pick<ClusterConfig, 'stateDir'>, app: string): string {
  return resolve(cluster.stateDir, 'apps', app);
}

export class ProcessRuntime implements Runtime {
  readonly name = 'process' as const;

  constructor(private readonly opts: ProcessRuntimeOptions = {}) {}

  async prepare(app: AppSpec, _cluster: ClusterConfig, onProgress?: (msg: string) => void): Promise<void> {
    const main = join(dirname(fileURLToPath(import.meta.url)), '..', 'runner', 'main.js');
    if (!existsSync(main)) throw runtimeError(`runner entry ${main} is missing`, { hint: 'build first: npm run build' });
    if (!existsSync(app.dir)) throw inputError(`app folder ${app.dir} does not exist`);
    // Original Jupiter apps: checked here, so that deploy says what is missing before any runner starts.
    const centralized = usesCentralized(app);
    if (centralized) ensureCentralizedMountPoint(app);
    onProgress?.(`process runtime: runners of ${app.name} will run as local processes${centralized ? `, each seeing its own copy of the scripts at ${CENTRALIZED} (private mount namespace)` : ''}`);
  }

  private async readStates(app: string, cluster: ClusterConfig): Promise<Array<{ file: string; state: RunnerState }>> {
    const dir = appStateDir(cluster, app);
    const names = await readdir(dir).catch(() => [] as string[]);
    const out: Array<{ file: string; state: RunnerState }> = [];
    for (const n of names.filter((f) => f.endsWith('.json'))) {
      try {
        out.push({ file: join(dir, n), state: JSON.parse(await readFile(join(dir, n), 'utf8')) as RunnerState });
      } catch {
        // a state file being rewritten right now; the next call sees it
      }
    }
    return out;
  }

  async start(app: AppSpec, specs: RunnerSpec[], cluster: ClusterConfig): Promise<RunnerHandle[]> {
    const dir = appStateDir(cluster, app.name);
    await mkdir(dir, { recursive: true });
    const supervisor = join(dirname(fileURLToPath(import.meta.url)), 'supervise.js');
    const existing = await this.readStates(app.name, cluster);
    const handles: RunnerHandle[] = [];
    for (const spec of specs) {
      const base = `${spec.task}@${spec.node}`;
      const stateFile = join(dir, `${base}.json`);
      // A task moved to another node (the reconciler healing a lost node): its runner elsewhere
      // stops after the item in hand, and a dead one's state file goes, so list() and teardown
      // only see the runner the placement names.
      for (const old of existing.filter((e) => e.state.task === spec.task && e.state.node !== spec.node)) {
        if (isAlive(old.state.supervisorPid)) process.kill(old.state.supervisorPid, 'SIGTERM');
        else if (isAlive(old.state.runnerPid)) process.kill(old.state.runnerPid!, 'SIGTERM');
        if (!isAlive(old.state.supervisorPid)) await rm(old.file, { force: true });
      }
      const running = existing.find((e) => e.file === stateFile && isAlive(e.state.supervisorPid));
      if (running) {
        handles.push({ task: spec.task, node: spec.node, id: String(running.state.runnerPid ?? running.state.supervisorPid) });
        continue;
      }
      await rm(stateFile, { force: true });
      const outputDir = resolve(this.opts.runsDir ?? 'runs', app.name, spec.runId, 'output');
      const log = openSync(join(dir, `${base}.log`), 'a');
      const child = spawn(process.execPath, ['--enable-source-maps', supervisor], {
        detached: true,
        stdio: ['ignore', log, log],
        env: { ...process.env, ...runnerEnv(spec, app.dir, { outputDir }), JUPITER_SUPERVISE_STATE: stateFile },
      });
      closeSync(log);
      child.unref();
      handles.push({ task: spec.task, node: spec.node, id: String(child.pid) });
    }
    // Report the runner pids once the supervisors have started them.
    // Generous: node start-up on a loaded machine takes seconds. On failure the caller tears down.
    const deadline = Date.now() + 30_000;
    for (const h of handles) {
      const stateFile = join(dir, `${h.task}@${h.node}.json`);
      for (;;) {
        const st = await readFile(stateFile, 'utf8').then((s) => JSON.parse(s) as RunnerState, () => undefined);
        if (st?.runnerPid) {
          h.id = String(st.runnerPid);
          break;
        }
        if (Date.now() > deadline) {
          const logFile = join(dir, `${h.task}@${h.node}.log`);
          const tail = (await readFile(logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-5).join('\n  ');
          throw runtimeError(`runner ${h.task}@${h.node} of ${app.name} did not start within 30 s${tail ? `:\n  ${tail}` : ''}`, { file: logFile, hint: `jupiter teardown ${app.name}, then look at the log` });
        }
        await sleep(25);
      }
    }
    return handles;
  }

  async list(app: string, cluster: ClusterConfig): Promise<RunnerHandle[]> {
    return (await this.readStates(app, cluster))
      .filter((e) => isAlive(e.state.supervisorPid))
      .map((e) => ({ task: e.state.task, node: e.state.node, id: String(e.state.runnerPid ?? e.state.supervisorPid) }));
  }

  async teardown(app: string, cluster: ClusterConfig): Promise<TeardownReport> {
    const states = await this.readStates(app, cluster);
    const removed: string[] = [];
    for (const { state } of states) {
      if (isAlive(state.supervisorPid)) process.kill(state.supervisorPid, 'SIGTERM');
    }
    const deadline = Date.now() + (this.opts.stopGraceSec ?? 20) * 1000;
    for (const { file, state } of states) {
      while (isAlive(state.supervisorPid) && Date.now() < deadline) await sleep(50);
      for (const pid of [state.supervisorPid, state.runnerPid]) {
        if (isAlive(pid)) {
          try {
            process.kill(pid!, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
      await rm(file, { force: true });
      removed.push(`process runner ${state.task}@${state.node} (pid ${state.runnerPid ?? '-'}, supervisor ${state.supervisorPid})`);
    }
    return { removed };
  }

  async logs(app: string, task: string, cluster: ClusterConfig, tail = 200): Promise<string> {
    const dir = appStateDir(cluster, app);
    const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.startsWith(`${task}@`) && f.endsWith('.log'));
    if (files.length === 0) throw inputError(`no logs of task ${task} of app ${app} under ${dir}`, { hint: 'is the app deployed with the process runtime?' });
    const parts: string[] = [];
    for (const f of files.sort()) {
      const lines = (await readFile(join(dir, f), 'utf8')).split('\n');
      if (lines[lines.length - 1] === '') lines.pop();
      parts.push(...(files.length > 1 ? [`==> ${f} <==`] : []), ...lines.slice(-tail));
    }
    return `${parts.join('\n')}\n`;
  }
}
