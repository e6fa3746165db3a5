// What Redis remembers about a deployment, beside the MappingRecord the dashboard reads:
// enough for `status`, `submit`, `logs` and `teardown` from any shell. A copy lives in the state
// folder (<stateDir>/deployments/<app>.json), so `teardown` still finds the Docker engines a
// deployment used when Redis lost it or the shell lacks the configuration used at deploy time.
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChainableCommander, Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import { redisKeys } from '../../config/redis-keys.js';
import { appKeys } from '../../circe/queue/keys.js';
import type { DockerEndpoint, RuntimeName } from '../../config/types.js';

/** A Docker engine a deployment used: enough to reach it again without the configuration. */
export interface RecordedEngine {
  /** Endpoint text without secrets (unix:///..., tcp://h:p, ssh://user@h:p). */
  key: string;
  nodes: string[];
  endpoint: DockerEndpoint;
}

export interface DeploymentRecord {
  app: string;
  appDir: string;
  runId: string;
  runtime: RuntimeName;
  mapper: string;
  outputDir: string;
  startedAt: number;
  /** docker runtime: every engine of the cluster at deploy time (teardown reaches these). */
  engines?: RecordedEngine[];
  /** The state folder of the stack the deployment runs on. */
  stateDir?: string;
  /** Where the cluster configuration came from at deploy time (for messages). */
  configSource?: string;
}

const deploymentKey = (prefix: string, app: string) => `${redisKeys(prefix).app(app)}deployment`;

const recordFile = (stateDir: string, app: string) => join(stateDir, 'deployments', `${app}.json`);

export async function writeDeployment(redis: Redis, prefix: string, rec: DeploymentRecord, mapping: MappingRecord): Promise<void> {
  const keys = redisKeys(prefix);
  if (rec.stateDir) {
    const file = recordFile(rec.stateDir, rec.app);
    mkdirSync(join(rec.stateDir, 'deployments'), { recursive: true, mode: 0o700 });
    writeFileSync(`${file}.tmp`, `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }
  await addMapping(redis.multi(), prefix, mapping)
    .set(deploymentKey(prefix, rec.app), JSON.stringify(rec))
    .sadd(keys.apps(), rec.app)
    .exec();
}

/**
 * Write a mapping record into a MULTI: the record, and the placement hash its runners read (a
 * runner its task moved away from stops: circe/fence/placement-fence.ts), in one step.
 */
export function addMapping(multi: ChainableCommander, prefix: string, mapping: MappingRecord): ChainableCommander {
  const placement = appKeys(prefix, mapping.app).placement;
  return multi.set(redisKeys(prefix).mapping(mapping.app), JSON.stringify(mapping)).del(placement).hset(placement, mapping.mapping);
}

export async function readDeployment(redis: Redis, prefix: string, app: string): Promise<DeploymentRecord | undefined> {
  const raw = await redis.get(deploymentKey(prefix, app));
  return raw ? (JSON.parse(raw) as DeploymentRecord) : undefined;
}

/** The state folder's copy of a deployment record, if any. */
export function readDeploymentFile(stateDir: string, app: string): DeploymentRecord | undefined {
  try {
    return JSON.parse(readFileSync(recordFile(stateDir, app), 'utf8')) as DeploymentRecord;
  } catch {
    return undefined;
  }
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

export async function forgetApp(redis: Redis, prefix: string, app: string, stateDir?: string): Promise<void> {
  await redis.srem(redisKeys(prefix).apps(), app);
  if (stateDir) forgetFile(stateDir, app);
}

/** Remove the state folder's copy of a deployment record. */
export function forgetFile(stateDir: string, app: string): void {
  rmSync(recordFile(stateDir, app), { force: true });
}
