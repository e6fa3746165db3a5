// Process runtime (the embedded default): runners are detached child processes of this machine,
// whatever logical node they are mapped to, each wrapped by a small supervisor (supervise.ts)
// that restarts it when it dies. A JavaScript/TypeScript task (its code runs inside its runner),
// a helper and the sink get a runner process each; the Python tasks of one app on one node share
// node host processes (runner/node-host.ts: their code runs in a Python process per task): one
// per task for a few tasks, one per core for many (hostsPerNode), so a node pays for Node a few
// times, not once per task, and still uses its cores. State per app under <stateDir>/apps/<app>/:
//   <task>@<node>.json   supervisor pid, current runner pid, restarts (hosted: `host` names the
//                        node host, whose pids are read from hosts/<key>.json; key: hostKey)
//   <task>@<node>.log    the runner's (or hosted task's) and the supervisor's output (kept after teardown)
//   hosts/<key>.tasks.json  the tasks a node host runs (rewritten + SIGHUP when they change)
//   hosts/<key>.json, .log  the node host's supervisor state and its own output
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { inputError, runtimeError } from '../../config/errors.js';
import { runnerEnv } from '../runner/env.js';
import type { HostFile } from '../runner/node-host.js';
import { CENTRALIZED, ensureCentralizedMountPoint, usesCentralized } from '../compat/centralized.js';
import { isAlive, isAliveWith, stopPid } from './pid.js';
import { defaultDataRoot } from '../dataplane/plane.js';
import { defaultWorkRoot, pruneAppWork } from '../runner/work-slots.js';
import type { RunnerHandle, RunnerSpec, Runtime, TeardownReport } from './types.js';
import { withMallocEnv } from './malloc-env.js';

interface RunnerState {
  supervisorPid: number;
  runnerPid: number | null;
  task: string;
  node: string;
  app: string;
  restarts: number;
  updatedAt: number;
  /** Hosted task: the key of the host that runs it (its pids live in hosts/<key>.json; hostKey). */
  host?: string;
}

/** Tasks a node host runs: Python DAG tasks, whose code runs in a process of its own anyway. */
export function hostable(app: AppSpec, task: string): boolean {
  const t = app.tasks.find((x) => x.name === task);
  return Boolean(t?.isDag && t.language === 'python') && hostsPerNode(1) > 0;
}

/** A node with at most this many Python tasks runs each in a host of its own. */
export const OWN_HOST_TASKS = 4;

/**
 * Node hosts of a node that runs `tasks` Python tasks: JUPITER_NODE_HOSTS (0 turns hosts off);
 * else one per task while there are at most OWN_HOST_TASKS, and one per core beyond. One event
 * loop does the queue work of every task it hosts, so one host caps a node at one core, and
 * stages sharing a loop wait for each other's Redis calls: on 2 cores a 3-stage Python chain
 * (bench:pipeline) ran 1.3x faster on three hosts than on two, 1.4x faster than on one. A host
 * costs ~35 MB, which a node of many tasks pays only once per core (10 apps of 20 tasks on 3
 * nodes with 4 hosts a node took 6.5 GB against 2.3 GB with one).
 */
export function hostsPerNode(tasks: number): number {
  const v = process.env.JUPITER_NODE_HOSTS;
  if (v !== undefined && v !== '' && Number.isInteger(Number(v)) && Number(v) >= 0) return Number(v);
  return tasks <= OWN_HOST_TASKS ? Math.max(1, tasks) : Math.max(1, availableParallelism());
}

/** Host key of a node's k-th host (k from 0): `<node>`, then `<node>+<k>` ('+' is never in a node name). */
export const hostKey = (node: string, k: number): string => (k === 0 ? node : `${node}+${k}`);

/**
 * Which host runs each task: a task a host already runs stays there; a new one goes to the host
 * with the fewest tasks among the first `count` (lowest index on a tie), so a node's tasks spread
 * evenly and adding tasks never moves a running one. `current`: tasks per host index.
 */
export function assignHosts(current: Map<number, string[]>, tasks: string[], count: number): Map<string, number> {
  const load = new Map<number, number>();
  for (let k = 0; k < count; k++) load.set(k, current.get(k)?.length ?? 0);
  const out = new Map<string, number>();
  for (const task of tasks) {
    const had = [...current].find(([, list]) => list.includes(task));
    if (had) {
      out.set(task, had[0]);
      continue;
    }
    let best = 0;
    for (const [k, n] of load) if (n < load.get(best)!) best = k;
    out.set(task, best);
    load.set(best, load.get(best)! + 1);
  }
  return out;
}

export interface ProcessRuntimeOptions {
  /** Root of deployment outputs (default: <cwd>/runs); the sink writes to <root>/<app>/<runId>/output. */
  runsDir?: string;
  /** Seconds to wait for runners to finish their item on teardown before SIGKILL. */
  stopGraceSec?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function hostPaths(dir: string, key: string): { spec: string; state: string; log: string } {
  const base = join(dir, 'hosts', key);
  return { spec: `${base}.tasks.json`, state: `${base}.json`, log: `${base}.log` };
}

async function readJson<T>(file: string): Promise<T | undefined> {
  return readFile(file, 'utf8').then((s) => JSON.parse(s) as T, () => undefined);
}

/**
 * A supervisor's state as read from `file`, with a pid that is no longer the process started for
 * this file (it died and the kernel gave the pid to another process) set to 0 / null: every later
 * isAlive and signal on the record then leaves that stranger alone.
 */
function ownPids(st: RunnerState, file: string): RunnerState {
  const ours = (pid: number | null): boolean => isAliveWith(pid, 'JUPITER_SUPERVISE_STATE', file);
  return { ...st, supervisorPid: ours(st.supervisorPid) ? st.supervisorPid : 0, runnerPid: ours(st.runnerPid) ? st.runnerPid : null };
}

async function readSupervised(file: string): Promise<RunnerState | undefined> {
  const st = await readJson<RunnerState>(file);
  return st && ownPids(st, file);
}

/** Whole or not at all: a host reading its task list never sees half a file. */
function writeJson(file: string, value: unknown): void {
  // Owner-only: a host's task list carries the Redis URL, password included.
  writeFileSync(`${file}.tmp`, JSON.stringify(value), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

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
    const hosts = new Map<string, RunnerState | undefined>();
    for (const n of names.filter((f) => f.endsWith('.json'))) {
      try {
        const file = join(dir, n);
        const recorded = JSON.parse(await readFile(file, 'utf8')) as RunnerState;
        let state: RunnerState;
        if (recorded.host === undefined) {
          state = ownPids(recorded, file);
        } else {
          // A hosted task's pids are its host's (the copies in its own file may be stale).
          if (!hosts.has(recorded.host)) hosts.set(recorded.host, await readSupervised(hostPaths(dir, recorded.host).state));
          const h = hosts.get(recorded.host);
          state = { ...recorded, supervisorPid: h?.supervisorPid ?? 0, runnerPid: h?.runnerPid ?? null, restarts: h?.restarts ?? recorded.restarts };
        }
        out.push({ file, state });
      } catch {
        // a state file being rewritten right now; the next call sees it
      }
    }
    return out;
  }

  /** Take `task` off the host `key` (moved elsewhere); a host left without tasks stops. */
  private async unhost(dir: string, key: string, task: string): Promise<void> {
    const p = hostPaths(dir, key);
    const [spec, st] = await Promise.all([readJson<HostFile>(p.spec), readSupervised(p.state)]);
    if (!spec) return;
    spec.tasks = spec.tasks.filter((t) => t !== task);
    // An empty list marks the host as stopping: a task placed here again meanwhile waits for it
    // to be gone and starts a new one (startHost) rather than joining a host on its way out.
    writeJson(p.spec, spec);
    if (spec.tasks.length === 0) {
      if (isAlive(st?.supervisorPid)) process.kill(st!.supervisorPid, 'SIGTERM');
    } else if (isAlive(st?.runnerPid)) {
      process.kill(st!.runnerPid!, 'SIGHUP');
    }
  }

  /** Tasks per host index of `node`'s hosts that run (their task lists). */
  private async nodeHosts(dir: string, node: string): Promise<Map<number, string[]>> {
    const out = new Map<number, string[]>();
    const names = await readdir(join(dir, 'hosts')).catch(() => [] as string[]);
    for (const n of names) {
      if (!n.endsWith('.tasks.json')) continue;
      const key = n.slice(0, -'.tasks.json'.length);
      const k = key === node ? 0 : key.startsWith(`${node}+`) ? Number(key.slice(node.length + 1)) : NaN;
      if (!Number.isInteger(k)) continue;
      const st = await readSupervised(hostPaths(dir, key).state);
      if (!isAlive(st?.supervisorPid)) continue;
      out.set(k, (await readJson<HostFile>(hostPaths(dir, key).spec))?.tasks ?? []);
    }
    return out;
  }

  /**
   * Start (or extend) the node host `key` of `node` for the hosted specs; returns its state file.
   * A running host gets the new task list and a SIGHUP; otherwise a supervisor starts one.
   */
  private async startHost(app: AppSpec, dir: string, key: string, node: string, specs: RunnerSpec[]): Promise<string> {
    const p = hostPaths(dir, key);
    await mkdir(dirname(p.spec), { recursive: true });
    const st = await readSupervised(p.state);
    let running = isAlive(st?.supervisorPid);
    const before = running ? (await readJson<HostFile>(p.spec))?.tasks ?? [] : [];
    if (running && before.length === 0) {
      await stopPid(st!.supervisorPid, 20_000);
      running = false;
    }
    const tasks = [...new Set([...before, ...specs.map((s) => s.task)])];
    const first = specs[0]!;
    const spec: HostFile = { app: app.name, appDir: app.dir, node, redisUrl: first.redisUrl, redisPrefix: first.redisPrefix, logDir: dir, tasks };
    writeJson(p.spec, spec);
    for (const s of specs) {
      writeJson(join(dir, `${s.task}@${node}.json`), { host: key, task: s.task, node, app: app.name, supervisorPid: st?.supervisorPid ?? 0, runnerPid: st?.runnerPid ?? null, restarts: 0, updatedAt: Date.now() });
    }
    if (running) {
      if (tasks.length > before.length && isAlive(st!.runnerPid)) process.kill(st!.runnerPid!, 'SIGHUP');
      return p.state;
    }
    await rm(p.state, { force: true });
    this.spawnSupervisor(p.log, { ...runnerEnv({ ...first, task: '' }, app.dir), JUPITER_HOST_FILE: p.spec, JUPITER_SUPERVISE_STATE: p.state });
    return p.state;
  }

  private spawnSupervisor(logFile: string, env: Record<string, string>): number | undefined {
    const supervisor = join(dirname(fileURLToPath(import.meta.url)), 'supervise.js');
    const log = openSync(logFile, 'a');
    const child = spawn(process.execPath, ['--enable-source-maps', supervisor], {
      detached: true,
      stdio: ['ignore', log, log],
      env: withMallocEnv({ ...process.env, ...env }),
    });
    closeSync(log);
    child.unref();
    return child.pid;
  }

  async start(app: AppSpec, specs: RunnerSpec[], cluster: ClusterConfig): Promise<RunnerHandle[]> {
    const dir = appStateDir(cluster, app.name);
    await mkdir(dir, { recursive: true });
    const existing = await this.readStates(app.name, cluster);
    const handles: Array<RunnerHandle & { stateFile: string; logFile: string; host?: string }> = [];
    const hosted = new Map<string, RunnerSpec[]>();
    for (const spec of specs) {
      const base = `${spec.task}@${spec.node}`;
      const stateFile = join(dir, `${base}.json`);
      const logFile = join(dir, `${base}.log`);
      // A task moved to another node (the reconciler healing a lost node): its runner elsewhere
      // stops after the item in hand, and a dead one's state file goes, so list() and teardown
      // only see the runner the placement names.
      for (const old of existing.filter((e) => e.state.task === spec.task && e.state.node !== spec.node)) {
        if (old.state.host !== undefined) {
          await this.unhost(dir, old.state.host, spec.task);
          await rm(old.file, { force: true });
          continue;
        }
        if (isAlive(old.state.supervisorPid)) process.kill(old.state.supervisorPid, 'SIGTERM');
        else if (isAlive(old.state.runnerPid)) process.kill(old.state.runnerPid!, 'SIGTERM');
        if (!isAlive(old.state.supervisorPid)) await rm(old.file, { force: true });
      }
      if (hostable(app, spec.task)) {
        hosted.set(spec.node, [...(hosted.get(spec.node) ?? []), spec]);
        handles.push({ task: spec.task, node: spec.node, id: '', stateFile: '', logFile, host: '' });
        continue;
      }
      const running = existing.find((e) => e.file === stateFile && isAlive(e.state.supervisorPid));
      if (running) {
        handles.push({ task: spec.task, node: spec.node, id: String(running.state.runnerPid ?? running.state.supervisorPid), stateFile, logFile });
        continue;
      }
      await rm(stateFile, { force: true });
      const outputDir = resolve(this.opts.runsDir ?? 'runs', app.name, spec.runId, 'output');
      const pid = this.spawnSupervisor(logFile, { ...runnerEnv(spec, app.dir, { outputDir }), JUPITER_SUPERVISE_STATE: stateFile });
      handles.push({ task: spec.task, node: spec.node, id: String(pid), stateFile, logFile });
    }
    for (const [node, list] of hosted) {
      const current = await this.nodeHosts(dir, node);
      const tasks = new Set([...[...current.values()].flat(), ...list.map((s) => s.task)]);
      const where = assignHosts(current, list.map((s) => s.task), hostsPerNode(tasks.size));
      const byHost = new Map<number, RunnerSpec[]>();
      for (const s of list) byHost.set(where.get(s.task)!, [...(byHost.get(where.get(s.task)!) ?? []), s]);
      for (const [k, specsOfHost] of byHost) {
        const key = hostKey(node, k);
        const stateFile = await this.startHost(app, dir, key, node, specsOfHost);
        for (const h of handles) if (h.host === '' && h.node === node && specsOfHost.some((s) => s.task === h.task)) Object.assign(h, { host: key, stateFile });
      }
    }
    // Report the runner pids once the supervisors have started them.
    // Generous: node start-up on a loaded machine takes seconds. On failure the caller tears down.
    const deadline = Date.now() + 30_000;
    for (const h of handles) {
      for (;;) {
        const st = await readJson<RunnerState>(h.stateFile);
        if (st?.runnerPid) {
          h.id = String(st.runnerPid);
          // The task's own state file names its host's pids too (readers of the file alone see them).
          if (h.host !== undefined) writeJson(join(dir, `${h.task}@${h.node}.json`), { host: h.host, task: h.task, node: h.node, app: app.name, supervisorPid: st.supervisorPid, runnerPid: st.runnerPid, restarts: st.restarts, updatedAt: Date.now() });
          break;
        }
        if (Date.now() > deadline) {
          const tail = (await readFile(h.logFile, 'utf8').catch(() => '')).trim().split('\n').slice(-5).join('\n  ');
          throw runtimeError(`runner ${h.task}@${h.node} of ${app.name} did not start within 30 s${tail ? `:\n  ${tail}` : ''}`, { file: h.logFile, hint: `jupiter teardown ${app.name}, then look at the log` });
        }
        await sleep(25);
      }
    }
    return handles.map(({ task, node, id }) => ({ task, node, id }));
  }

  async list(app: string, cluster: ClusterConfig): Promise<RunnerHandle[]> {
    return (await this.readStates(app, cluster))
      .filter((e) => isAlive(e.state.supervisorPid))
      .map((e) => ({ task: e.state.task, node: e.state.node, id: String(e.state.runnerPid ?? e.state.supervisorPid) }));
  }

  async teardown(app: string, cluster: ClusterConfig): Promise<TeardownReport> {
    const states = await this.readStates(app, cluster);
    const removed: string[] = [];
    // Hosted tasks share their host's supervisor: each is signalled once.
    for (const pid of new Set(states.map((s) => s.state.supervisorPid))) {
      if (isAlive(pid)) process.kill(pid, 'SIGTERM');
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
      removed.push(`process runner ${state.task}@${state.node} (pid ${state.runnerPid ?? '-'}, supervisor ${state.supervisorPid}${state.host !== undefined ? ', node host' : ''})`);
    }
    const hostDir = join(appStateDir(cluster, app), 'hosts');
    for (const f of (await readdir(hostDir).catch(() => [] as string[])).filter((n) => n.endsWith('.json'))) await rm(join(hostDir, f), { force: true });
    // Work folders the killed runners could not remove, and the app's emptied folders.
    const workRoot = defaultWorkRoot();
    if (pruneAppWork(workRoot, app)) removed.push(`work folders of ${app}`);
    // The nodes' data stores of the direct data path (one folder per node under this one).
    const data = defaultDataRoot(workRoot, cluster.redisPrefix, app);
    if (existsSync(data)) {
      await rm(data, { recursive: true, force: true });
      removed.push(`data folder ${data}`);
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
