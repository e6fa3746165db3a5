// Where a command finds Redis: an explicit --redis URL, else the cluster configuration (which
// applies JUPITER_REDIS_URL), else the running embedded stack's private server.
import type { Redis } from 'ioredis';
import { runtimeError } from '../config/errors.js';
import { loadClusterConfig } from '../config/cluster/load.js';
import { maskUrl } from '../config/cluster/mask.js';
import type { ClusterConfig } from '../config/types.js';
import { connectRedis } from '../circe/queue/connection.js';
import { waitForRedis } from './stack/redis-server.js';
import { stackEndpoints } from './stack/endpoints.js';
import { usePrivateEngine } from './stack/dockerd.js';
import { readStackState, stateDir } from './stack/state.js';

export interface RedisTarget {
  url: string;
  prefix: string;
  cluster: ClusterConfig;
  dashboardUrl?: string;
}

export async function resolveRedis(explicitUrl?: string): Promise<RedisTarget> {
  const cluster = await loadClusterConfig();
  // Local nodes reach their containers on the stack's private engine, when it started one.
  usePrivateEngine(cluster, readStackState(stateDir(cluster.stateDir)));
  const ep = stackEndpoints(cluster);
  const url = explicitUrl ?? cluster.redisUrl ?? ep?.redisUrl;
  if (!url) {
    // Name the state folder looked in: a stack started with another JUPITER_CONFIG lives elsewhere.
    throw runtimeError(`no Jupiter stack is running here (no private Redis in the state folder ${cluster.stateDir}, and no JUPITER_REDIS_URL or --redis)`, {
      hint: 'deploy an app first (`jupiter deploy <app>` starts the embedded stack), set JUPITER_REDIS_URL, or use the JUPITER_CONFIG the stack was started with',
    });
  }
  return { url, prefix: cluster.redisPrefix, cluster, dashboardUrl: ep?.dashboardUrl };
}

export interface Connected extends RedisTarget {
  redis: Redis;
}

/** A client for short commands: it fails fast instead of queueing while Redis is down. */
export async function openRedis(url: string, name = 'jupiter:cli'): Promise<Redis> {
  try {
    await waitForRedis(url, 3000);
  } catch (e) {
    // The reason tells an unreachable server from a refused password (WRONGPASS, NOAUTH).
    const why = ((e as { cause?: unknown }).cause as Error | undefined)?.message;
    throw runtimeError(`cannot connect to Redis at ${maskUrl(url)}${why ? `: ${why}` : ''}`, { hint: 'check --redis / JUPITER_REDIS_URL, or start the stack' }, e);
  }
  return connectRedis(url, { name, failFast: true });
}

export async function connectToStack(explicitUrl?: string): Promise<Connected> {
  const target = await resolveRedis(explicitUrl);
  return { ...target, redis: await openRedis(target.url) };
}
