// Where the agents' Redis is: --redis, else the cluster configuration (which applies
// JUPITER_REDIS_URL), else the running embedded stack's private Redis.
import { Redis } from 'ioredis';
import { loadClusterConfig } from '../../config/cluster/load.js';
import { runtimeError } from '../../config/errors.js';
import type { ClusterConfig } from '../../config/types.js';
import { stackEndpoints } from '../stack/endpoints.js';
import { maskUrl } from '../../profilers/agent/agent.js';

export interface RedisTarget {
  url: string;
  prefix: string;
  cluster: ClusterConfig;
}

export async function resolveRedis(explicitUrl?: string): Promise<RedisTarget> {
  const cluster = await loadClusterConfig();
  const url = explicitUrl ?? cluster.redisUrl ?? stackEndpoints(cluster)?.redisUrl;
  if (!url) {
    throw runtimeError('no Redis to talk to: none is configured and the embedded stack is not running', {
      hint: 'pass --redis redis://host:port, set JUPITER_REDIS_URL, or start the stack (`jupiter deploy` starts it)',
    });
  }
  return { url, prefix: cluster.redisPrefix, cluster };
}

/** A client for short CLI commands: fails fast instead of queueing while Redis is down. */
export async function connectRedis(url: string): Promise<Redis> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
  } catch (e) {
    redis.disconnect();
    throw runtimeError(`cannot connect to Redis at ${maskUrl(url)}: ${(e as Error).message}`, {
      hint: 'check --redis / JUPITER_REDIS_URL, or start the stack',
    }, e);
  }
  return redis;
}
