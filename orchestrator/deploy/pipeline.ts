// `jupiter deploy`: validate -> services -> profiles -> map -> runners -> inputs -> (wait).
// A failure after runners or keys were created removes them again: nothing half-deployed stays.
import { readdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { MappingRecord } from '../../config/events.js';
import { inputError, isJupiterError, JupiterError, runtimeError } from '../../config/errors.js';
import { loadApp } from '../../config/app/load.js';
import { loadClusterConfig } from '../../config/cluster/load.js';
import { validateAppAgainstCluster } from '../../config/app/cluster-check.js';
import { HOME, type AppSpec, type ClusterConfig, type RuntimeName } from '../../config/types.js';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys } from '../../circe/queue/keys.js';
import { configureApp, type PipelineSettings } from '../../circe/queue/settings.js';
import { submitItems, type SubmittedItem } from '../../circe/home/source.js';
import { waitForItems, type ItemResult } from '../../circe/home/wait.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';
import type { Progress } from '../progress.js';
import { withStep } from '../progress.js';
import { ensureStack } from '../stack/embedded.js';
import { gatherProfiles, pinsEveryTask, place } from './placement.js';
import { readDeployment, readDeploymentFile, writeDeployment, type DeploymentRecord, type RecordedEngine } from './record.js';
import { clusterEngines } from '../../circe/runtime/docker-engine.js';
import { mappers } from '../../mappers/index.js';
import { homeRuntime, runtimeFor } from './runtimes.js';
import { teardownApp } from './teardown.js';
import { waitStep } from './wait-step.js';

export interface DeployOptions {
  /** App folder or name under apps/. */
  app: string;
  mapper?: string;
  runtime?: string;
  /** Folder of input files (default: the app's sample_input/). */
  inputs?: string;
  wait?: boolean;
  /** Seconds to wait for every output with --wait. */
  timeoutSec?: number;
  seed?: number;
  /** Seconds to wait for a complete profile of the nodes. */
  profileWaitSec?: number;
  /** Root of run outputs (default ./runs). */
  runsDir?: string;
  settings?: Partial<PipelineSettings>;
}

export interface DeployResult {
  app: AppSpec;
  cluster: ClusterConfig;
  record: MappingRecord;
  deployment: DeploymentRecord;
  items: SubmittedItem[];
  results?: ItemResult[];
  dashboardUrl?: string;
}

async function inputFiles(app: AppSpec, dir?: string): Promise<string[]> {
  if (!dir) return app.sampleInputs;
  const abs = resolve(dir);
  const names = await readdir(abs, { withFileTypes: true }).catch(() => {
    throw inputError(`input folder ${dir} cannot be read`, { hint: 'pass a folder of input files with --inputs' });
  });
  const files = names.filter((d) => d.isFile() && !d.name.startsWith('.')).map((d) => join(abs, d.name)).sort();
  if (files.length === 0) throw inputError(`input folder ${dir} holds no files`);
  return files;
}

/**
 * Wait until every task's runner announced it consumes its queue. Runners start at once and share
 * the cores, so on a busy machine they all become ready late and close together: the budget is
 * `timeoutMs`, and each runner that becomes ready gives the others at least `stallMs` more, so a
 * slow but advancing start is waited for and only a stalled one fails.
 */
export async function waitReady(redis: Redis, key: string, tasks: string[], opts: { timeoutMs: number; stallMs: number; pollMs?: number }, onProgress: (n: number, total: number) => void): Promise<void> {
  const started = Date.now();
  let deadline = started + opts.timeoutMs;
  let seen = -1;
  for (;;) {
    const ready = new Set(await redis.hkeys(key));
    const missing = tasks.filter((t) => !ready.has(t));
    const n = tasks.length - missing.length;
    if (n !== seen) onProgress(n, tasks.length);
    if (missing.length === 0) return;
    if (n > seen && seen >= 0) deadline = Math.max(deadline, Date.now() + opts.stallMs);
    seen = n;
    if (Date.now() > deadline) {
      const shown = missing.length > 10 ? `${missing.slice(0, 10).join(', ')} and ${missing.length - 10} more` : missing.join(', ');
      throw runtimeError(`runner(s) of ${shown} did not start within ${Math.round((Date.now() - started) / 1000)} s (${n} of ${tasks.length} ready)`, { hint: 'see `jupiter logs <app> <task>`; on a busy machine, deploy again when it is quieter' });
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 25));
  }
}

function newRunId(): string {
  const d = new Date();
  const stamp = d.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  return `${stamp}-${randomBytes(2).toString('hex')}`;
}

/** The engines a docker deployment uses, as its record keeps them: no secrets (inline PEM text stays out). */
function recordedEngines(cluster: ClusterConfig): RecordedEngine[] {
  return clusterEngines(cluster).map((e) => {
    const endpoint = { ...e.endpoint };
    if (endpoint.kind === 'tcp' && endpoint.tls) {
      endpoint.tls = Object.fromEntries(Object.entries(endpoint.tls).filter(([, v]) => typeof v === 'string' && !v.includes('-----BEGIN')));
    }
    return { key: e.key, nodes: [...e.nodes], endpoint };
  });
}

/** The deploy error, saying exactly what state the app is left in. */
function failedDeployError(e: unknown, app: string, s: { previous?: DeploymentRecord; replaced: boolean; created: boolean; left: string[]; running?: string }): unknown {
  if (!isJupiterError(e)) return e;
  let state: string;
  if (s.running) {
    const state = `the new deployment of ${app} (run ${s.running}) is up and keeps running; its items may still finish`
      + ` (\`jupiter status ${app}\` to watch, \`jupiter teardown ${app}\` to remove it)`;
    return new JupiterError(`${e.message}\n  state: ${state}`, e.kind, { file: e.file, line: e.line, hint: e.hint }, { cause: e.cause });
  }
  if (s.previous && !s.replaced) state = `the previous deployment of ${app} (run ${s.previous.runId}) was not touched and still runs`;
  else if (s.replaced) state = `the previous deployment of ${app} (run ${s.previous!.runId}) had been removed; nothing of ${app} runs now`;
  else state = `nothing of ${app} runs`;
  if (s.created) state += s.left.length ? `; what the new deployment started could not all be removed: ${s.left.join('; ')}` : '; what the new deployment started was removed';
  return new JupiterError(`${e.message}\n  state: ${state}`, e.kind, { file: e.file, line: e.line, hint: e.hint }, { cause: e.cause });
}

export async function deploy(opts: DeployOptions, progress: Progress): Promise<DeployResult> {
  const { app, cluster, files } = await withStep(progress, 'Validating app and cluster configuration', async (step) => {
    const app = await loadApp(opts.app);
    const cluster = await loadClusterConfig();
    if (opts.mapper) cluster.mapper = opts.mapper;
    if (opts.runtime) {
      if (opts.runtime !== 'process' && opts.runtime !== 'docker') {
        throw inputError(`unknown runtime ${JSON.stringify(opts.runtime)}`, { hint: 'one of: process, docker' });
      }
      cluster.runtime = opts.runtime as RuntimeName;
    }
    for (const w of validateAppAgainstCluster(app, cluster)) progress.info(w);
    // A mapper name typo is bad input: say so before any service starts.
    if (!mappers[cluster.mapper]) {
      throw inputError(`unknown mapper ${JSON.stringify(cluster.mapper)}`, { hint: `one of: ${Object.keys(mappers).join(', ')} (jupiter map --mapper list)` });
    }
    const files = await inputFiles(app, opts.inputs);
    step.update(`${app.name}: ${app.dagTasks.length} tasks, ${files.length} inputs, ${cluster.nodes.length} nodes`);
    return { app, cluster, files };
  });

  // A stack that cannot come up (an engine of a node unreachable for its agent) fails the deploy
  // before anything of the app is touched: say so, naming the deployment that still runs.
  const stack = await ensureStack(cluster, progress).catch((e: unknown) => {
    throw failedDeployError(e, app.name, { previous: readDeploymentFile(cluster.stateDir, app.name), replaced: false, created: false, left: [] });
  });
  progress.info(`state folder: ${cluster.stateDir}${cluster.stateDirOrigin ? ` (${cluster.stateDirOrigin})` : ''}`);
  const redis = connectRedis(stack.redisUrl, { name: 'jupiter:deploy', failFast: true });
  const prefix = cluster.redisPrefix;
  const runtime = runtimeFor(cluster.runtime);
  let created = false;
  let previous: DeploymentRecord | undefined;
  let replaced = false;
  // Set once every runner consumes and the inputs are in: a wait that times out after that is no
  // failed deploy, and removing a deployment that streams would throw its items away.
  let running: string | undefined;
  try {
    // Everything the new deployment needs is checked before the running one is touched: live
    // nodes (profiles), a placement, and the runtime (engines reachable, images built). A
    // deploy that fails here leaves the previous deployment running as it was.
    previous = await readDeployment(redis, prefix, app.name);
    const nodes = cluster.nodes.map((n) => n.name);
    const snap = await gatherProfiles(redis, app, {
      prefix,
      nodes,
      waitMs: (opts.profileWaitSec ?? 15) * 1000,
      execProfile: true,
    }, progress);
    // An app that pins every task is placed statically: the step must not name a mapper it never ran.
    const { record } = await withStep(progress, pinsEveryTask(app) ? 'Placing every task where the app pins it' : `Mapping with ${cluster.mapper}`, async (step) => {
      const placed = place(app, snap, nodes, { mapper: cluster.mapper, seed: opts.seed });
      step.update(`predicted makespan ${placed.record.predictedMakespan.toFixed(3)} s`);
      return placed;
    });
    await withStep(progress, `Preparing the ${runtime.name} runtime`, async (step) => {
      await runtime.prepare(app, cluster, (msg) => step.update(msg));
    });

    if (previous) {
      await withStep(progress, `Removing the previous deployment of ${app.name} (run ${previous.runId})`, async (step) => {
        const r = await teardownApp(redis, cluster, app.name);
        if (r.unreached.length) {
          throw runtimeError(`the previous deployment of ${app.name} could not be removed: ${r.unreached.join('; ')}`, {
            hint: `it may still run there; start that engine and run \`jupiter teardown ${app.name}\`, then deploy again`,
          });
        }
        replaced = true;
        step.update(`${r.removed.length} things removed`);
      });
    }

    const runId = newRunId();
    const outputDir = resolve(opts.runsDir ?? 'runs', app.name, runId, 'output');
    const deployment: DeploymentRecord = {
      app: app.name, appDir: app.dir, runId, runtime: cluster.runtime, mapper: record.mapper, outputDir, startedAt: Date.now(),
      stateDir: cluster.stateDir, configSource: cluster.source,
    };
    if (cluster.runtime === 'docker') deployment.engines = recordedEngines(cluster);
    created = true;
    await writeDeployment(redis, prefix, deployment, record);
    await configureApp(redis, prefix, app.name, { ...opts.settings, dataPath: opts.settings?.dataPath ?? cluster.dataPath });

    const spec = (task: string, node: string): RunnerSpec => ({ app: app.name, task, node, runId, redisUrl: stack.redisUrl, redisPrefix: prefix });
    await withStep(progress, `Starting ${app.tasks.length} task runner(s) and the home sink`, async (step) => {
      // Sink and runners start together: each takes a few hundred ms of CPU to load.
      const [, handles] = await Promise.all([
        homeRuntime().start(app, [spec(HOME, HOME)], cluster),
        runtime.start(app, app.tasks.map((t) => spec(t.name, record.mapping[t.name]!)), cluster),
      ]);
      step.update(`${handles.length} runners`);
      // Feed nothing before every runner consumes its queue: makespans then measure the DAG,
      // not the runners' start-up.
      // Runners start at once and share the cores: generated apps of the original have 50+ tasks.
      const timeoutMs = Math.max(60_000, 2_000 * app.tasks.length);
      await waitReady(redis, appKeys(prefix, app.name).ready, [...app.dagTasks, HOME], { timeoutMs, stallMs: 30_000 }, (n, total) => step.update(`${n}/${total} runners ready`));
    });

    if (files.length === 0) progress.info(`no sample inputs: ${app.name} runs and waits for input (jupiter submit ${app.name} <files...>)`);
    const items = files.length === 0 ? [] : await withStep(progress, `Submitting ${files.length} input(s)`, async (step) =>
      submitItems(redis, prefix, app, files, {
        runId,
        onProgress: (done, total) => step.update(`${done}/${total}`),
        onBackPressure: (task, depth) => step.update(`waiting: queue of ${task} holds ${depth}`),
      }));

    running = runId;
    let results: ItemResult[] | undefined;
    if (opts.wait && items.length > 0) {
      results = await waitStep(progress, `Waiting for the outputs of ${items.length} item(s)`, items.length, (onProgress) =>
        waitForItems(redis, prefix, app.name, items.map((i) => i.item), { timeoutMs: (opts.timeoutSec ?? 300) * 1000, onProgress }));
    }
    return { app, cluster, record, deployment, items, results, dashboardUrl: stack.dashboardUrl };
  } catch (e) {
    let left: string[] = [];
    if (created && !running) {
      await withStep(progress, 'Deploy failed: removing what was started', async () => {
        left = (await teardownApp(redis, cluster, app.name)).unreached;
      }).catch((err: unknown) => { left = [(err as Error).message]; });
    }
    throw failedDeployError(e, app.name, { previous, replaced, created, left, running });
  } finally {
    redis.disconnect();
  }
}
