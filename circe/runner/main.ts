// Task runner process entry (dist/circe/runner/main.js), configured only by JUPITER_* variables.
// JUPITER_TASK=home runs the home's sink; a non-DAG helper task runs its script once and exits
// with the script's code; any other task consumes its queue until SIGTERM.
import { loadApp } from '../../config/app/load.js';
import { isJupiterError } from '../../config/errors.js';
import { runHelper } from '../invoke/helper.js';
import { connectRedis } from '../queue/connection.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { appKeys, SINK_QUEUE } from '../queue/keys.js';
import { Sink } from '../home/sink.js';
import { TaskRunner } from './task-runner.js';
import { readRunnerEnv } from './env.js';

const log = (msg: string): void => {
  process.stderr.write(`${new Date().toISOString()} ${msg}\n`);
};

/** Tell the deploy pipeline this runner consumes its queue, so inputs are not fed to nobody. */
async function announceReady(url: string, prefix: string, app: string, task: string, node: string): Promise<void> {
  const redis = connectRedis(url, { failFast: true });
  await redis.hset(appKeys(prefix, app).ready, task, JSON.stringify({ node, pid: process.pid, at: Date.now() })).catch(() => undefined);
  await redis.quit().catch(() => undefined);
}

async function main(): Promise<number> {
  const env = readRunnerEnv();
  const where = `${env.app}/${env.task}@${env.node}`;
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

  if (env.task === SINK_QUEUE) {
    const sink = await Sink.start({ app: env.app, redisUrl: env.redisUrl, prefix: env.redisPrefix, outputDir: env.outputDir, node: env.node, log });
    closing = () => sink.close();
    await announceReady(env.redisUrl, env.redisPrefix, env.app, env.task, env.node);
    log(`${where}: sink writing to ${env.outputDir} (Redis ${maskUrl(env.redisUrl)})`);
    await stopped;
    return 0;
  }

  const app = await loadApp(env.appDir);
  const task = app.tasks.find((t) => t.name === env.task);
  if (!task) throw new Error(`app ${app.name} has no task ${env.task}`);

  if (!task.isDag) {
    log(`${where}: running helper ${task.scriptFile} ${task.args.join(' ')}`);
    const code = await runHelper(task);
    const redis = connectRedis(env.redisUrl, { failFast: true });
    await redis.hset(appKeys(env.redisPrefix, env.app).helper(task.name), 'exitCode', code, 'at', Date.now(), 'node', env.node).catch(() => undefined);
    await redis.quit().catch(() => undefined);
    log(`${where}: helper exited with code ${code}`);
    return code;
  }

  const runner = await TaskRunner.start({ app, task, node: env.node, redisUrl: env.redisUrl, prefix: env.redisPrefix, workDir: env.workDir, log });
  closing = () => runner.close();
  await announceReady(env.redisUrl, env.redisPrefix, env.app, env.task, env.node);
  log(`${where}: consuming queue ${task.name} (Redis ${maskUrl(env.redisUrl)}${runner.invokerPid ? `, python worker pid ${runner.invokerPid}` : ''})`);
  if (stopping) await runner.close();
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
