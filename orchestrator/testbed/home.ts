// The home on the emulated network: its own namespace, where the testbed runs the deployment's
// Redis (password-protected, bound to the home's address). Runners and agents reach it only
// through their shaped link to the home; the CLI and the hub reach it over the root namespace's
// bridge leg (control plane). Like the embedded stack's, it keeps an append-only file, so that a
// restart (restartHomeRedis: the Redis fault on the testbed) loses nothing.
import { randomBytes } from 'node:crypto';
import { RedisServer } from '../stack/redis-server.js';
import { nsWrap } from './sh.js';
import { dirname, join } from 'node:path';
import { inputError } from '../../config/errors.js';
import { processStartMs, stopPid } from '../../circe/runtime/pid.js';
import { ownsPid, requireTestbedState, writeTestbedState, type HostState, type TestbedState } from './state.js';

export const HOME_REDIS_PORT = 6379;

export async function startHomeRedis(home: HostState, dir: string, password = randomBytes(18).toString('hex')): Promise<NonNullable<TestbedState['redis']>> {
  const redisDir = join(dir, 'redis');
  const server = await new RedisServer({
    dir: redisDir,
    bind: home.addr,
    port: HOME_REDIS_PORT,
    appendOnly: true,
    detached: true,
    password,
    wrap: nsWrap(home.ns),
  }).start();
  const pid = server.pid ?? 0;
  return { pid, startedAt: processStartMs(pid) ?? Date.now(), port: server.port, url: server.url, dir: redisDir };
}

/**
 * Stop the home's Redis (SIGTERM: it flushes its append-only file) and start it again on the
 * same address, password and files; the testbed's state names the new process. Returns when
 * the new one answers. `down` is called while Redis is away (e.g. to hold it down a while).
 */
export async function restartHomeRedis(dir: string, down: () => Promise<void> = async () => undefined): Promise<NonNullable<TestbedState['redis']>> {
  const state = requireTestbedState(dir);
  const home = state.hosts[0]!;
  const old = state.redis;
  if (!old) throw inputError(`the testbed in ${dir} has no Redis`, { hint: 'bring it up again: jupiter testbed up' });
  if (ownsPid(old)) await stopPid(old.pid, 10_000);
  await down();
  const password = decodeURIComponent(new URL(old.url).password);
  state.redis = await startHomeRedis(home, dirname(old.dir), password);
  writeTestbedState(dir, state);
  return state.redis;
}
