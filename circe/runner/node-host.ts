// A node host (process runtime): one Node process runs the task runners of all the Python tasks
// of one app mapped to one node, instead of a process (and a supervisor) per task. What a
// runner costs is mostly Node itself (~30 MB of heap, modules and code a process) and its Redis
// connections; here they are paid once per node, and the tasks share two connections (each
// BullMQ worker keeps its own blocking one). Failures stay per task: a Python task's code runs
// in its own interpreter process (a crash there fails only that task's item, which is retried,
// and the next item gets a fresh interpreter; the interpreters are forked from one per host,
// py-forkserver.ts, so the host pays for a Python start once, not once per task), a task that cannot start is retried on its own
// with a growing delay while the others run, and each task keeps its own queue, log file and
// readiness entry. JavaScript tasks run inside their runner, so they keep a process each.
// The host's task list is a JSON file (HostFile) the runtime rewrites and signals with SIGHUP
// when tasks come or go (the reconciler moving tasks between nodes).
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { AppSpec, TaskSpec } from '../../config/types.js';
import { loadApp } from '../../config/app/load.js';
import { discardPrestarted, prestartInvoker } from '../invoke/invoker.js';
import { PyForkServer } from '../invoke/py-forkserver.js';
import { pythonExecutable } from '../invoke/python.js';
import { connectRedis } from '../queue/connection.js';
import { appKeys } from '../queue/keys.js';
import { withScripts } from '../queue/scripts.js';
import { TaskRunner } from './task-runner.js';
import { PlacementFence } from '../fence/placement-fence.js';

/** What the runtime tells a host (JUPITER_HOST_FILE). */
export interface HostFile {
  app: string;
  appDir: string;
  node: string;
  redisUrl: string;
  redisPrefix: string;
  /** Folder of the per-task logs (`<task>@<node>.log`). */
  logDir: string;
  workDir?: string;
  tasks: string[];
}

export function readHostFile(file: string): HostFile {
  return JSON.parse(readFileSync(file, 'utf8')) as HostFile;
}

/** Where `python3` leads, asked once for all the host's workers (pythonExecutable). */
function resolvePython(log: (msg: string) => void): void {
  if (process.env.JUPITER_PYTHON) return;
  try {
    const exe = pythonExecutable();
    if (exe) process.env.JUPITER_PYTHON = exe;
  } catch (e) {
    log(`cannot ask python3 where it lives (${(e as Error).message.split('\n')[0]}); each worker starts python3`);
  }
}

interface Hosted {
  task: TaskSpec;
  fd: number;
  log(msg: string): void;
  runner?: TaskRunner;
  fence?: PlacementFence;
  starting?: Promise<void>;
  retry?: NodeJS.Timeout;
  failures: number;
  stopped: boolean;
}

export class NodeHost {
  private readonly hosted = new Map<string, Hosted>();
  private readonly redis: Redis;
  private readonly workerRedis: Redis;
  /** Forks the Python workers: one interpreter start for the node's tasks, a process each still. */
  private readonly fork?: PyForkServer;
  private reconciling: Promise<void> = Promise.resolve();
  private closed = false;
  /** Tasks moved to another node while this one was out of reach (the fence): not started again while the host file lists them. */
  private readonly movedAway = new Set<string>();

  private constructor(private readonly file: string, private readonly spec: HostFile, private readonly app: AppSpec, private readonly log: (msg: string) => void) {
    const name = `jupiter:${spec.app}:host:${spec.node}`;
    this.redis = withScripts(connectRedis(spec.redisUrl, { name }));
    this.workerRedis = connectRedis(spec.redisUrl, { name: `${name}:worker` });
    this.fork = process.env.JUPITER_PY_FORK === '0' ? undefined : new PyForkServer();
  }

  static async start(file: string, log: (msg: string) => void): Promise<NodeHost> {
    // Forked workers start python3 once (the fork server): a shim in front of it costs that once
    // and in the background, less than the blocking question (~0.7 s on a busy machine).
    if (process.env.JUPITER_PY_FORK === '0') resolvePython(log);
    const spec = readHostFile(file);
    const host = new NodeHost(file, spec, await loadApp(spec.appDir), log);
    await host.reconcile();
    return host;
  }

  private logPath(task: string): string {
    return join(this.spec.logDir, `${task}@${this.spec.node}.log`);
  }

  get tasks(): string[] {
    return [...this.hosted.keys()];
  }

  /** Start the tasks the host file lists and stop the ones it no longer lists (SIGHUP). */
  reconcile(): Promise<void> {
    this.reconciling = this.reconciling.then(async () => {
      if (this.closed) return;
      let wanted: string[];
      try {
        wanted = readHostFile(this.file).tasks;
      } catch (e) {
        this.log(`cannot read ${this.file}: ${(e as Error).message}; keeping the tasks as they are`);
        return;
      }
      for (const t of this.movedAway) if (!wanted.includes(t)) this.movedAway.delete(t);
      wanted = wanted.filter((t) => !this.movedAway.has(t));
      const gone = [...this.hosted.keys()].filter((t) => !wanted.includes(t));
      await Promise.all(gone.map((t) => this.stopTask(t)));
      const fresh: Hosted[] = [];
      for (const name of wanted.filter((t) => !this.hosted.has(t))) {
        const task = this.app.tasks.find((t) => t.name === name);
        if (!task) {
          this.log(`app ${this.app.name} has no task ${name}; not hosted`);
          continue;
        }
        const fd = openSync(this.logPath(name), 'a');
        const h: Hosted = { task, fd, failures: 0, stopped: false, log: (msg) => writeSync(fd, `${new Date().toISOString()} ${msg}\n`) };
        this.hosted.set(name, h);
        fresh.push(h);
      }
      // Not awaited past start-up attempts: a task that keeps failing retries on its own.
      await Promise.all(fresh.map((h) => this.startTask(h)));
      if (fresh.length > 0) this.log(`hosting ${this.hosted.size} task(s) of ${this.app.name} on ${this.spec.node}`);
    });
    return this.reconciling;
  }

  private startTask(h: Hosted): Promise<void> {
    const where = `${this.app.name}/${h.task.name}@${this.spec.node}`;
    // Every worker starts at once, while the runners load and connect (and again on a retry).
    prestartInvoker(this.app, h.task, this.spec.node, { stderr: h.fd, stderrPath: this.logPath(h.task.name), forkServer: this.fork });
    h.starting = (async () => {
      try {
        const runner = await TaskRunner.start({
          app: this.app, task: h.task, node: this.spec.node, redisUrl: this.spec.redisUrl, prefix: this.spec.redisPrefix,
          workDir: this.spec.workDir ? join(this.spec.workDir, h.task.name) : undefined, log: h.log,
          shared: { redis: this.redis, workerRedis: this.workerRedis }, taskStderr: h.fd,
        });
        if (h.stopped) {
          await runner.close();
          return;
        }
        h.runner = runner;
        h.failures = 0;
        h.fence = PlacementFence.start({
          redis: this.redis, key: appKeys(this.spec.redisPrefix, this.app.name).placement, task: h.task.name, node: this.spec.node,
          onMoved: (to) => {
            h.log(`${where}: ${h.task.name} now runs on ${to} (moved while this node was out of reach); stopping it here`);
            this.movedAway.add(h.task.name);
            void this.stopTask(h.task.name);
          },
        });
        await this.redis.hset(appKeys(this.spec.redisPrefix, this.app.name).ready, h.task.name, JSON.stringify({ node: this.spec.node, pid: process.pid, at: Date.now() })).catch(() => undefined);
        h.log(`${where}: consuming queue ${h.task.name} in node host pid ${process.pid}${runner.invokerPid ? `, python worker pid ${runner.invokerPid}` : ''}`);
      } catch (e) {
        // Like the supervisor's restarts of a runner process, but for this task alone.
        h.failures++;
        const delay = Math.min(5000, 200 * 2 ** (h.failures - 1));
        h.log(`${where}: cannot start (${(e as Error).message}); retry #${h.failures} in ${delay} ms`);
        if (!h.stopped) h.retry = setTimeout(() => void this.startTask(h), delay);
      }
    })();
    return h.starting;
  }

  private async stopTask(name: string): Promise<void> {
    const h = this.hosted.get(name);
    if (!h) return;
    this.hosted.delete(name);
    h.stopped = true;
    clearTimeout(h.retry);
    h.fence?.stop();
    await h.starting;
    await h.runner?.close().catch((e: Error) => h.log(`closing: ${e.message}`));
    // A runner that never started left its interpreter unclaimed.
    await discardPrestarted(name);
    h.log(`${this.app.name}/${name}@${this.spec.node}: stopped`);
    closeSync(h.fd);
  }

  /** Finish the items in hand of every task, then close the shared connections. */
  async close(): Promise<void> {
    await this.reconciling;
    this.closed = true;
    await Promise.all([...this.hosted.keys()].map((t) => this.stopTask(t)));
    await Promise.all([this.redis.quit().catch(() => undefined), this.workerRedis.quit().catch(() => undefined), this.fork?.close()]);
  }
}
