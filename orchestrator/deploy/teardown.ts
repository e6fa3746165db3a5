// Removing a deployment: every runner (containers or processes, and the home's sink), then every
// Redis key of the app. Node profiles stay: they describe the nodes, not the app.
import type { Redis } from 'ioredis';
import type { ClusterConfig } from '../../config/types.js';
import { teardownAppKeys } from '../../circe/queue/teardown.js';
import { forgetApp, readDeployment } from './record.js';
import { homeRuntime, runtimeFor } from './runtimes.js';

export async function teardownApp(redis: Redis, cluster: ClusterConfig, app: string): Promise<string[]> {
  const rec = await readDeployment(redis, cluster.redisPrefix, app);
  const removed: string[] = [];
  const names = new Set<string>([rec?.runtime ?? cluster.runtime, 'process']);
  for (const name of names) {
    const runtime = name === 'process' ? homeRuntime() : runtimeFor(name);
    try {
      removed.push(...(await runtime.teardown(app, cluster)).removed);
    } catch (e) {
      // A runtime that is not reachable (no Docker engine) holds nothing of this app.
      if (name === rec?.runtime) throw e;
    }
  }
  const keys = await teardownAppKeys(redis, cluster.redisPrefix, app);
  await forgetApp(redis, cluster.redisPrefix, app);
  if (keys > 0) removed.push(`${keys} Redis key(s) of ${app} (queues, blobs, joins, records, events)`);
  return removed;
}
