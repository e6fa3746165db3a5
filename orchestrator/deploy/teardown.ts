// Removing a deployment: every runner (containers or processes, and the home's sink), then every
// Redis key of the app. Node profiles stay: they describe the nodes, not the app. Before the keys
// go, what the app's tasks took against their profiles is kept for its next deploy
// (orchestrator/profiles/calibration.ts).
// Containers are looked for on the engines the deployment recorded (not only the engines of the
// configuration in use now): a shell without the deploy-time JUPITER_CONFIG still reaches them.
// When an engine of the deployment cannot be reached, the record and keys stay (so a later
// teardown can finish the job) and the result names what may still run.
import type { Redis } from 'ioredis';
import type { ClusterConfig, NodeConfig } from '../../config/types.js';
import { teardownAppKeys } from '../../circe/queue/teardown.js';
import { keepCalibration } from '../profiles/calibration.js';
import { forgetApp, readDeployment, readDeploymentFile, type DeploymentRecord } from './record.js';
import { homeRuntime, runtimeFor } from './runtimes.js';

export interface TeardownResult {
  /** What was removed, a line each. */
  removed: string[];
  /** Engines (or containers) of the deployment that could not be reached: what may still run. */
  unreached: string[];
  /** The record found (Redis, else the state folder), if any. */
  record?: DeploymentRecord;
}

/** The cluster to look for the deployment's containers in: the engines it recorded, if any. */
function withRecordedEngines(cluster: ClusterConfig, rec: DeploymentRecord | undefined): ClusterConfig {
  if (!rec?.engines?.length) return cluster;
  const nodes: NodeConfig[] = rec.engines.map((e) => ({ name: e.nodes.join(','), host: '', docker: e.endpoint }));
  return { ...cluster, nodes, home: { ...cluster.home, docker: undefined } };
}

/** Stop and remove the app's runners (containers on the recorded engines, processes, the sink). */
export async function teardownRunners(cluster: ClusterConfig, app: string, rec: DeploymentRecord | undefined): Promise<Omit<TeardownResult, 'record'>> {
  const removed: string[] = [];
  const unreached: string[] = [];
  const names = new Set<string>([rec?.runtime ?? cluster.runtime, 'process']);
  for (const name of names) {
    const runtime = name === 'process' ? homeRuntime() : runtimeFor(name);
    const target = name === 'docker' ? withRecordedEngines(cluster, rec) : cluster;
    try {
      const report = await runtime.teardown(app, target);
      removed.push(...report.removed);
      // An unreachable engine matters only where the deployment ran.
      if (name === rec?.runtime) unreached.push(...(report.failed ?? []));
    } catch (e) {
      // A runtime that is not reachable (no Docker engine) holds nothing of this app.
      if (name === rec?.runtime) throw e;
    }
  }
  return { removed, unreached };
}

export async function teardownApp(redis: Redis, cluster: ClusterConfig, app: string): Promise<TeardownResult> {
  const rec = (await readDeployment(redis, cluster.redisPrefix, app)) ?? readDeploymentFile(cluster.stateDir, app);
  const { removed, unreached } = await teardownRunners(cluster, app, rec);
  if (unreached.length > 0) return { removed, unreached, record: rec };
  // Evidence for the next deploy, never a reason for this teardown to fail.
  const kept = await keepCalibration(redis, cluster.redisPrefix, app).catch(() => []);
  if (kept.length > 0) removed.push(`kept what ${kept.join(', ')} took at runtime against their profiles, for the next deploy of ${app}`);
  const keys = await teardownAppKeys(redis, cluster.redisPrefix, app);
  await forgetApp(redis, cluster.redisPrefix, app, rec?.stateDir ?? cluster.stateDir);
  if (keys > 0) removed.push(`${keys} Redis key(s) of ${app} (queues, blobs, joins, records, events)`);
  return { removed, unreached, record: rec };
}
