// Keeping what a deployment's tasks took for the next deploy of the app, and reading it back
// (profilers/models/calibration.ts says why). Kept when the deployment is removed (a teardown, or a
// deploy replacing it) under `observed:<app>`, beside the app's execution profiles, which also
// outlive deployments; for a day, so that a cluster changed since does not inherit it for long.
// Read with the running deployment's own records folded in: a deploy over a running one maps with
// what that one saw.
import type { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import type { ProfileSnapshot } from '../../config/types.js';
import { calibrationOf, mergeCalibrations, type AppCalibration } from '../../profilers/models/calibration.js';
import { readExecRecords } from '../adapt/records.js';
import { parseJson, readProfiles } from './read.js';

export const CALIBRATION_TTL_MS = 24 * 3600_000;

export async function readCalibration(redis: Redis, prefix: string, app: string): Promise<AppCalibration> {
  return parseJson<AppCalibration>(await redis.get(redisKeys(prefix).observed(app))) ?? {};
}

/**
 * What is kept for the app, with the runtime records of its running deployment (its newest items),
 * if any, folded in as the newest evidence; `latest` names the tasks those records judged.
 * `snapshot`: the raw profiles (read here when not given).
 */
export async function gatherCalibration(redis: Redis, prefix: string, app: string, snapshot?: ProfileSnapshot, now = Date.now()): Promise<{ cal: AppCalibration; latest: string[] }> {
  const kept = await readCalibration(redis, prefix, app);
  const records = await readExecRecords(redis, app, { prefix });
  if (records.length === 0) return { cal: kept, latest: [] };
  const latest = calibrationOf(records, snapshot ?? (await readProfiles(redis, { prefix })), app, now);
  return { cal: mergeCalibrations(kept, latest), latest: Object.keys(latest) };
}

/** Keep the running deployment's evidence before its keys go; returns the tasks it judged. */
export async function keepCalibration(redis: Redis, prefix: string, app: string): Promise<string[]> {
  const { cal, latest } = await gatherCalibration(redis, prefix, app);
  if (latest.length > 0) await redis.set(redisKeys(prefix).observed(app), JSON.stringify(cal), 'PX', CALIBRATION_TTL_MS);
  return latest;
}
