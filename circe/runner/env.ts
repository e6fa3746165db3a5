// The runner's whole configuration comes from JUPITER_* environment variables (same contract
// for the process and the docker runtime).
import { resolve } from 'node:path';
import { inputError } from '../../config/errors.js';
import { DEFAULT_PREFIX } from '../../config/redis-keys.js';
import type { RunnerSpec } from '../runtime/types.js';

export interface RunnerEnv extends RunnerSpec {
  appDir: string;
  /** Sink only: where outputs are written. */
  outputDir: string;
  workDir?: string;
  /** Direct data path: the node's store (the docker runtime's data volume). */
  dataDir?: string;
}

export function runnerEnv(spec: RunnerSpec, appDir: string, extra: { outputDir?: string; workDir?: string } = {}): Record<string, string> {
  const env: Record<string, string> = {
    JUPITER_APP: spec.app,
    JUPITER_APP_DIR: appDir,
    JUPITER_TASK: spec.task,
    JUPITER_NODE: spec.node,
    JUPITER_RUN_ID: spec.runId,
    JUPITER_REDIS_URL: spec.redisUrl,
    JUPITER_REDIS_PREFIX: spec.redisPrefix,
  };
  if (extra.outputDir) env.JUPITER_OUTPUT_DIR = extra.outputDir;
  if (extra.workDir) env.JUPITER_WORK_DIR = extra.workDir;
  return env;
}

export function readRunnerEnv(env: NodeJS.ProcessEnv = process.env): RunnerEnv {
  const need = (k: string): string => {
    const v = env[k];
    if (!v) throw inputError(`environment variable ${k} is not set`, { hint: 'the runtime sets JUPITER_APP, JUPITER_APP_DIR, JUPITER_TASK, JUPITER_NODE, JUPITER_RUN_ID, JUPITER_REDIS_URL' });
    return v;
  };
  const app = need('JUPITER_APP');
  const runId = env.JUPITER_RUN_ID || 'run';
  return {
    app,
    appDir: need('JUPITER_APP_DIR'),
    task: need('JUPITER_TASK'),
    node: env.JUPITER_NODE || 'local',
    runId,
    redisUrl: need('JUPITER_REDIS_URL'),
    redisPrefix: env.JUPITER_REDIS_PREFIX || DEFAULT_PREFIX,
    outputDir: resolve(env.JUPITER_OUTPUT_DIR || `runs/${app}/${runId}/output`),
    workDir: env.JUPITER_WORK_DIR || undefined,
    dataDir: env.JUPITER_DATA_DIR || undefined,
  };
}
