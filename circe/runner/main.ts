// Task runner process entry (dist/circe/runner/main.js), configured only by JUPITER_* variables.
// JUPITER_TASK=home runs the home's sink; a non-DAG helper task runs its script once and exits
// with the script's code; any other task consumes its queue until SIGTERM. With
// JUPITER_HOST_FILE the process is a node host running several tasks' runners (node-host.ts).
// Start-up is on the critical path of every deploy (all runners start at once on few cores), so
// each path imports only its own modules (the sink, or the app loader and the task runner), a
// Python task's interpreter boots while the runner loads BullMQ, and the connection that
// announces readiness is opened at once, so it is up when the runner is.
import { accessSync, constants } from 'node:fs';
import type { Redis } from 'ioredis';
import { isJupiterError } from '../../config/errors.js';
import { runHelper } from '../invoke/helper.js';
import { prestartInvoker } from '../invoke/invoker.js';
import { connectRedis } from '../queue/connection.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { appKeys, SINK_QUEUE } from '../queue/keys.js';
import { readRunnerEnv } from './env.js';
import { centralizedLaunch } from '../compat/centralized.js';
import { defaultWorkRoot } from './work-slots.js';
import { PlacementFence } from '../fence/placement-fence.js';

const log = (msg: string): void => {
  process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
};

/** Tell the deploy pipeline this runner consumes its queue, so inputs are not fed to nobody. */
async function announceReady(redis: Redis, prefix: string, app: string, task: string, node: string): Promise<void> {
  await redis.hset(appKeys(prefix, app).ready, task, JSON.stringify({ node, pid: process.pid, at: Date.now() })).catch(() => undefined);
  await redis.quit().catch(() => undefined);
}

async function main(): Promise<number> {
  const hostFile = process.env.JUPITER_HOST_FILE;
  const env = hostFile ? undefined : readRunnerEnv();
  const where = env ? `${env.app}/${env.task}@${env.node}` : `node host ${process.env.JUPITER_APP}@${process.env.JUPITER_NODE}`;
  let closing: (() => Promise<void>) | undefined;
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    const stop = (sig: string): void => {
      if (stopping) return;
      stopping = true;
      log(`${where}: ${sig}, finishing the item in hand`);
      void (closing?.() ?? Promise.resolve()).finally(resolve);
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });

  if (!env) {
    // SIGHUP (tasks came or went) is caught before anything loads: its default ends the process.
    let missed = false;
    const early = (): void => {
      missed = true;
    };
    process.on('SIGHUP', early);
    const { NodeHost } = await import('./node-host.js');
    const host = await NodeHost.start(hostFile!, log);
    closing = () => host.close();
    process.off('SIGHUP', early).on('SIGHUP', () => void host.reconcile());
    if (missed) void host.reconcile();
    log(`node host of ${host.tasks.length} task(s) running (pid ${process.pid})`);
    if (stopping) await host.close();
    await stopped;
    return 0;
  }

  // Only for the announcement (or a helper's exit code): the runner and sink have their own.
  const announcer = connectRedis(env.redisUrl, { failFast: true });

  if (env.task === SINK_QUEUE) {
    const { Sink } = await import('../home/sink.js');
    const sink = await Sink.start({ app: env.app, redisUrl: env.redisUrl, prefix: env.redisPrefix, outputDir: env.outputDir, node: env.node, log });
    closing = () => sink.close();
    await announceReady(announcer, env.redisPrefix, env.app, env.task, env.node);
    log(`${where}: sink writing to ${env.outputDir} (Redis ${maskUrl(env.redisUrl)})`);
    await stopped;
    return 0;
  }

  const { loadApp } = await import('../../config/app/load.js');
  const app = await loadApp(env.appDir);
  const task = app.tasks.find((t) => t.name === env.task);
  if (!task) throw new Error(`app ${app.name} has no task ${env.task}`);

  if (!task.isDag) {
    log(`${where}: running helper ${task.scriptFile} ${task.args.join(' ')}`);
    const launch = centralizedLaunch(app, task, env.node, defaultWorkRoot());
    const code = await runHelper(task, process.env, launch && { ...launch, appDir: app.dir }).finally(() => launch?.cleanup());
    await announcer.hset(appKeys(env.redisPrefix, env.app).helper(task.name), 'exitCode', code, 'at', Date.now(), 'node', env.node).catch(() => undefined);
    await announcer.quit().catch(() => undefined);
    log(`${where}: helper exited with code ${code}`);
    return code;
  }

  prestartInvoker(app, task, env.node);
  const { TaskRunner } = await import('./task-runner.js');
  // A data volume this user cannot write (a custom base image without /jupiter/data owned by
  // uid 10001): the store stays in the container's /tmp and does not survive a restart.
  const dataDir = env.dataDir && writable(env.dataDir) ? env.dataDir : undefined;
  if (env.dataDir && !dataDir) log(`${where}: ${env.dataDir} is not writable by uid ${process.getuid?.()}; the node's data store stays in /tmp and is lost when this runner restarts`);
  const runner = await TaskRunner.start({ app, task, node: env.node, redisUrl: env.redisUrl, prefix: env.redisPrefix, workDir: env.workDir, dataDir, log });
  // Exit 0 when the task was moved to another node while this one was out of reach: neither the
  // supervisor nor the container's restart policy starts a runner that ended normally.
  const fence = PlacementFence.start({
    redis: runner.connection, key: appKeys(env.redisPrefix, env.app).placement, task: task.name, node: env.node,
    onMoved: (to) => {
      log(`${where}: ${task.name} now runs on ${to} (moved while this node was out of reach); stopping this runner`);
      process.kill(process.pid, 'SIGTERM');
    },
  });
  closing = () => {
    fence.stop();
    return runner.close();
  };
  await announceReady(announcer, env.redisPrefix, env.app, env.task, env.node);
  log(`${where}: consuming queue ${task.name} (Redis ${maskUrl(env.redisUrl)}${runner.invokerPid ? `, python worker pid ${runner.invokerPid}` : ''})`);
  if (stopping) await closing();
  await stopped;
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    log(isJupiterError(e) ? e.format() : `runner failed: ${(e as Error).stack ?? String(e)}`);
    process.exit(isJupiterError(e) ? e.exitCode : 1);
  },
);

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
