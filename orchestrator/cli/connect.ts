// Commands that act on what is deployed (status, submit, logs, teardown) find Redis here:
// the configured URL, else the embedded stack's private server if it runs.
import type { Redis } from 'ioredis';
import { runtimeError } from '../../config/errors.js';
import { loadClusterConfig } from '../../config/cluster/load.js';
import type { ClusterConfig } from '../../config/types.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { waitForRedis } from '../stack/redis-server.js';
import { stackEndpoints } from '../stack/endpoints.js';

export interface Connected {
  cluster: ClusterConfig;
  redis: Redis;
  redisUrl: string;
  dashboardUrl?: string;
}

export async function connectToStack(): Promise<Connected> {
  const cluster = await loadClusterConfig();
  const ep = stackEndpoints(cluster);
  if (!ep) {
    throw runtimeError('no Jupiter stack is running here (no private Redis and no JUPITER_REDIS_URL)', {
      hint: 'deploy an app first: jupiter deploy <app>',
    });
  }
  await waitForRedis(ep.redisUrl, 5000);
  const redis = connectRedis(ep.redisUrl, { name: 'jupiter:cli', failFast: true });
  return { cluster, redis, redisUrl: ep.redisUrl, dashboardUrl: ep.dashboardUrl };
}
