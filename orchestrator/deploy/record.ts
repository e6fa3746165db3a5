// What Redis remembers about a deployment, beside the MappingRecord the dashboard reads:
// enough for `status`, `submit`, `logs` and `teardown` from any shell.
import type { Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { RuntimeName } from '../../config/types.js';

export interface DeploymentRecord {
  app: string;
  appDir: string;
  runId: string;
  runtime: RuntimeName;
  mapper: string;
  outputDir: string;
  startedAt: number;
}

const deploymentKey = (prefix: string, app: string) => `${redisKeys(prefix).app(app)}deployment`;

export async function writeDeployment(redis: Redis, prefix: string, rec: DeploymentRecord, mapping: MappingRecord): Promise<void> {
  const keys = redisKeys(prefix);
  await redis
    .multi()
    .set(deploymentKey(prefix, rec.app), JSON.stringify(rec))
    .set(keys.mapping(rec.app), JSON.stringify(mapping))
    .sadd(keys.apps(), rec.app)
    .exec();
}

export async function readDeployment(redis: Redis, prefix: string, app: string): Promise<DeploymentRecord | undefined> {
  const raw = await redis.get(deploymentKey(prefix, app));
  return raw ? (JSON.parse(raw) as DeploymentRecord) : undefined;
}

export async function readMapping(redis: Redis, prefix: string, app: string): Promise<MappingRecord | undefined> {
  const raw = await redis.get(redisKeys(prefix).mapping(app));
  return raw ? (JSON.parse(raw) as MappingRecord) : undefined;
}

/** Apps with a deployment record, sorted. */
export async function deployedApps(redis: Redis, prefix: string): Promise<string[]> {
  const names = await redis.smembers(redisKeys(prefix).apps());
  const live: string[] = [];
  for (const n of names.sort()) if (await redis.exists(deploymentKey(prefix, n))) live.push(n);
  return live;
}

export async function forgetApp(redis: Redis, prefix: string, app: string): Promise<void> {
  await redis.srem(redisKeys(prefix).apps(), app);
}
