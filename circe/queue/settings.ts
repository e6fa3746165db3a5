// Pipeline settings of one app. The deploy pipeline writes them once (configureApp); every
// runner, the source and the sink read the same values from Redis, so they always agree.
import type { Redis } from 'ioredis';
import { inputError } from '../../config/errors.js';
import type { DataPath } from '../../config/types.js';
import { appKeys } from './keys.js';

export interface PipelineSettings {
  /** Attempts per job before it is dead-lettered (BullMQ attempts). */
  attempts: number;
  /** First retry delay in ms; doubles each attempt (exponential backoff). */
  backoffMs: number;
  /** Largest file that may travel through the pipeline, in bytes. */
  maxBlobBytes: number;
  /** Waiting jobs per task queue before the source holds back (like NiFi's 10,000 objects). */
  queueCap: number;
  /** Items run at once by one runner (1 = Jupiter's one-at-a-time, pipelined across tasks). */
  concurrency: number;
  /** BullMQ lock: a job whose runner died is redelivered after at most about this long. */
  lockMs: number;
  /** How long `task ran for item` markers live, suppressing late redeliveries (seconds). */
  doneTtlSec: number;
  /** Completed items whose records are kept (older ones are trimmed). */
  keepItems: number;
  /** Failed BullMQ jobs kept for inspection (dead letters are kept separately). */
  keepFailedJobs: number;
  /** Events stream length (approximate cap). */
  eventsMaxLen: number;
  /**
   * Where output bytes travel: `central` through the one Redis at the home; `direct` from the
   * producing node to the receiving one (circe/dataplane), Redis carrying the control only.
   * Files up to INLINE_MAX travel inside their deliveries either way.
   */
  dataPath: DataPath;
  /** Direct path: bytes a node's store may hold for receivers that have not taken them yet. */
  storeBytes: number;
  /** Direct path: how long a receiver keeps asking an unreachable node (and a producer waits on a full store), ms. */
  fetchPatienceMs: number;
}

export type { DataPath };
export const DATA_PATHS: readonly DataPath[] = ['central', 'direct'];

export const DEFAULT_SETTINGS: PipelineSettings = {
  attempts: 3,
  backoffMs: 1000,
  maxBlobBytes: 64 * 1024 * 1024,
  queueCap: 10_000,
  concurrency: 1,
  lockMs: 30_000,
  doneTtlSec: 3600,
  keepItems: 100_000,
  keepFailedJobs: 1000,
  eventsMaxLen: 10_000,
  dataPath: 'central',
  storeBytes: 1024 ** 3,
  fetchPatienceMs: 120_000,
};

export function checkSettings(s: Partial<PipelineSettings>): PipelineSettings {
  const out = { ...DEFAULT_SETTINGS, ...s };
  if (!DATA_PATHS.includes(out.dataPath)) {
    throw inputError(`pipeline setting dataPath must be one of ${DATA_PATHS.join(', ')}, got ${JSON.stringify(out.dataPath)}`, {
      hint: 'central: bytes through the home\'s Redis; direct: node to node',
    });
  }
  for (const [k, v] of Object.entries(out)) {
    if (k === 'dataPath') continue;
    const min = k === 'backoffMs' ? 0 : 1;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || !Number.isInteger(v)) {
      throw inputError(`pipeline setting ${k} must be an integer >= ${min}, got ${String(v)}`, {
        hint: `defaults: ${JSON.stringify(DEFAULT_SETTINGS)}`,
      });
    }
  }
  return out;
}

/** Store the app's settings (merged over the defaults) and return them. */
export async function configureApp(redis: Redis, prefix: string, app: string, s: Partial<PipelineSettings> = {}): Promise<PipelineSettings> {
  const full = checkSettings(s);
  await redis.hset(appKeys(prefix, app).settings, 'json', JSON.stringify(full));
  return full;
}

export async function readSettings(redis: Redis, prefix: string, app: string): Promise<PipelineSettings> {
  return parseSettings(await redis.hget(appKeys(prefix, app).settings, 'json'));
}

/** The app's settings from their stored JSON (HGET <settings> json); the defaults when none. */
export function parseSettings(raw: string | null): PipelineSettings {
  if (!raw) return { ...DEFAULT_SETTINGS };
  return checkSettings(JSON.parse(raw) as Partial<PipelineSettings>);
}
