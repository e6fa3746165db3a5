// The home on the emulated network: its own namespace, where the testbed runs the deployment's
// Redis (password-protected, bound to the home's address). Runners and agents reach it only
// through their shaped link to the home; the CLI and the hub reach it over the root namespace's
// bridge leg (control plane).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { RedisServer } from '../stack/redis-server.js';
import { nsWrap } from './sh.js';
import type { HostState, TestbedState } from './state.js';

export const HOME_REDIS_PORT = 6379;

export async function startHomeRedis(home: HostState, dir: string): Promise<NonNullable<TestbedState['redis']>> {
  const redisDir = join(dir, 'redis');
  const server = await new RedisServer({
    dir: redisDir,
    bind: home.addr,
    port: HOME_REDIS_PORT,
    appendOnly: false,
    detached: true,
    password: randomBytes(18).toString('hex'),
    wrap: nsWrap(home.ns),
  }).start();
  return { pid: server.pid ?? 0, port: server.port, url: server.url, dir: redisDir };
}
