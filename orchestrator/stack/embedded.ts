// The embedded default: with no Redis or MQTT configured, Jupiter runs its own private
// services on this machine (a redis-server with append-only persistence under <stateDir>/redis,
// a hub process with the aedes MQTT broker, telemetry bridge and dashboard, and one agent per
// local node). They outlive the CLI so a deployment keeps streaming; `jupiter stack down` stops them.
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { maskUrl } from '../../config/cluster/mask.js';
import type { ClusterConfig } from '../../config/types.js';
import { runtimeError } from '../../config/errors.js';
import type { Progress } from '../progress.js';
import { withStep } from '../progress.js';
import { freePort } from './free-port.js';
import { RedisServer, waitForRedis } from './redis-server.js';
import { isAlive, stopPid, readStackState, stateDir, writeStackState, type StackState } from './state.js';
import { spawnDetached } from './detached.js';
import { agentNodes, ensureNodeAgents, pingAgentEngines, removeNodeAgents, type NodeAgentResult } from './node-agents.js';
import { agentProfilerArgs } from './agent-container.js';
import { ensurePrivateEngine, stopPrivateEngine, usePrivateEngine } from './dockerd.js';

import type { StackEndpoints } from './endpoints.js';

/** Environment variable that hands the hub its Redis URL (kept out of the process list). */
export const HUB_REDIS_ENV = 'JUPITER_HUB_REDIS_URL';
/** Environment variables with the login the hub's embedded broker requires (also out of the process list). */
export const HUB_MQTT_USERNAME_ENV = 'JUPITER_HUB_MQTT_USERNAME';
export const HUB_MQTT_PASSWORD_ENV = 'JUPITER_HUB_MQTT_PASSWORD';
const HUB_MQTT_USERNAME = 'jupiter';

async function ensureRedis(dir: string, state: StackState, progress: Progress): Promise<boolean> {
  if (state.redis && isAlive(state.redis.pid)) {
    try {
      await waitForRedis(state.redis.url, 2000);
      return false;
    } catch {
      // A stale pid that now belongs to something else: start a new server below.
    }
  }
  await withStep(progress, 'Starting private Redis', async (step) => {
    // A fresh random password: other local users cannot use the private Redis. The URL holding
    // it lives only in stack.json (mode 0600, folder 0700) and in the environment of our processes.
    const password = randomBytes(18).toString('hex');
    const server = await new RedisServer({ dir: join(dir, 'redis'), appendOnly: true, detached: true, password }).start();
    state.redis = { pid: server.pid ?? 0, url: server.url, port: server.port, startedAt: Date.now() };
    step.update(maskUrl(server.url));
  });
  return true;
}

async function waitHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw runtimeError(`the Jupiter hub did not answer at ${url}`, { hint: 'see .jupiter/logs/hub.log' });
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function ensureHub(dir: string, cluster: ClusterConfig, redisUrl: string, state: StackState, progress: Progress): Promise<boolean> {
  if (state.hub && isAlive(state.hub.pid)) return false;
  await withStep(progress, 'Starting hub (MQTT broker, telemetry, dashboard)', async (step) => {
    const [mqttPort, wsPort, httpPort] = [await freePort(), await freePort(), await freePort()];
    const args = ['stack', 'hub', '--http-port', String(httpPort)];
    if (!cluster.mqtt.url) args.push('--mqtt-port', String(mqttPort), '--ws-port', String(wsPort));
    // The URL (maybe with a password) goes through the environment: any local user can read a
    // process's arguments (ps, /proc/<pid>/cmdline), only its owner its environment.
    // The embedded broker takes no anonymous clients: like the private Redis, a fresh random
    // password, kept in stack.json (0600) for our own clients (hub bridge, dashboard, viz).
    const login = cluster.mqtt.url ? undefined : { username: HUB_MQTT_USERNAME, password: randomBytes(18).toString('hex') };
    const pid = spawnDetached(dir, 'hub', args, {
      [HUB_REDIS_ENV]: redisUrl,
      ...(login ? { [HUB_MQTT_USERNAME_ENV]: login.username, [HUB_MQTT_PASSWORD_ENV]: login.password } : {}),
    });
    const httpUrl = `http://127.0.0.1:${httpPort}`;
    await waitHttp(`${httpUrl}/healthz`, 15_000);
    state.hub = {
      pid,
      startedAt: Date.now(),
      httpUrl,
      mqttUrl: cluster.mqtt.url ?? `mqtt://127.0.0.1:${mqttPort}`,
      mqttWsUrl: cluster.mqtt.url ? '' : `ws://127.0.0.1:${wsPort}`,
      ...(login ? { mqttUsername: login.username, mqttPassword: login.password } : {}),
    };
    step.update(httpUrl);
  });
  return true;
}

async function ensureAgents(dir: string, cluster: ClusterConfig, redisUrl: string, state: StackState, progress: Progress): Promise<boolean> {
  state.agents ??= {};
  // Nodes whose engine the configuration names get an agent container instead (node-agents.ts).
  const missing = cluster.nodes.filter((n) => !n.agentOnEngine && !isAlive(state.agents?.[n.name]?.pid));
  if (missing.length === 0) return false;
  await withStep(progress, `Starting ${missing.length} local agent(s)`, async () => {
    for (const node of missing) {
      const port = node.agent?.port ?? (await freePort());
      const listen = `${node.agent?.host ?? '127.0.0.1'}:${port}`;
      // The Redis URL (with its password) goes through the environment, not the argument list.
      const pid = spawnDetached(dir, `agent-${node.name}`, ['agent', '--node', node.name, '--listen', listen, ...agentProfilerArgs(cluster)], { JUPITER_REDIS_URL: redisUrl });
      state.agents![node.name] = { pid, listen, startedAt: Date.now() };
    }
  });
  return true;
}

/**
 * Make sure the services this cluster configuration needs are up; returns where they are, and the
 * agent containers of the nodes whose engine the configuration names (started, replaced or kept).
 */
export async function ensureStack(cluster: ClusterConfig, progress: Progress): Promise<StackEndpoints & { agents: NodeAgentResult[] }> {
  const dir = stateDir(cluster.stateDir);
  const state = readStackState(dir);
  let started = false;
  let redisUrl = cluster.redisUrl;
  if (!redisUrl) {
    started = (await ensureRedis(dir, state, progress)) || started;
    redisUrl = state.redis!.url;
    writeStackState(dir, state);
  } else {
    await waitForRedis(redisUrl, 5000);
  }
  // Before the hub, so that its reconciler already sees the private engine.
  started = (await ensurePrivateEngine(cluster, dir, state, progress)) || started;
  writeStackState(dir, state);
  started = (await ensureHub(dir, cluster, redisUrl, state, progress)) || started;
  writeStackState(dir, state);
  if (cluster.embedded) {
    started = (await ensureAgents(dir, cluster, redisUrl, state, progress)) || started;
    writeStackState(dir, state);
  }
  let agents: NodeAgentResult[] = [];
  if (agentNodes(cluster).length > 0) {
    // Engines that do not answer fail here, before the local agents (which a running deployment's
    // nodes may still rely on) are stopped.
    await pingAgentEngines(cluster);
    // A local agent process left from before the node's engine was named would register the same node.
    for (const n of agentNodes(cluster)) {
      const old = state.agents?.[n.name];
      if (old) {
        await stopPid(old.pid);
        delete state.agents![n.name];
        writeStackState(dir, state);
      }
    }
    const url = redisUrl;
    agents = await withStep(progress, 'Node agents on their Docker engines', async (step) => {
      const r = await ensureNodeAgents(cluster, url, { onProgress: (m) => step.update(m) });
      const counts = ['started', 'replaced', 'kept'].map((a) => [a, r.filter((x) => x.action === a).length] as const).filter(([, n]) => n > 0);
      step.update(counts.map(([a, n]) => `${n} ${a}`).join(', '));
      return r;
    });
    started = agents.some((a) => a.action !== 'kept') || started;
  }
  return {
    redisUrl,
    mqttUrl: state.hub?.mqttUrl,
    mqttWsUrl: state.hub?.mqttWsUrl || undefined,
    mqttUsername: state.hub?.mqttUsername,
    mqttPassword: state.hub?.mqttPassword,
    dashboardUrl: state.hub?.httpUrl,
    started,
    agents,
  };
}

/** Tear down every app still deployed; unreached lists engines whose containers may still run. */
export async function teardownAll(cluster: ClusterConfig, redisUrl: string): Promise<{ lines: string[]; unreached: string[] }> {
  const { connectRedis } = await import('../../circe/queue/connection.js');
  const { deployedApps } = await import('../deploy/record.js');
  const { teardownApp } = await import('../deploy/teardown.js');
  const redis = connectRedis(redisUrl, { name: 'jupiter:stack-down', failFast: true });
  const lines: string[] = [];
  const unreached: string[] = [];
  try {
    for (const app of await deployedApps(redis, cluster.redisPrefix)) {
      const r = await teardownApp(redis, cluster, app);
      lines.push(...r.removed.map((x) => `removed ${x}`));
      unreached.push(...r.unreached.map((x) => `${app}: ${x}`));
    }
  } catch {
    // Redis unreachable: nothing to learn from it; its processes are stopped below
  } finally {
    redis.disconnect();
  }
  return { lines, unreached };
}

/** Tear down what is still deployed, then stop every private service; returns what was done, a line each. */
export async function stopStack(cluster: ClusterConfig): Promise<string[]> {
  const dir = stateDir(cluster.stateDir);
  const state = readStackState(dir);
  const stopped: string[] = [];
  usePrivateEngine(cluster, state);
  // Apps still deployed on this Redis go first: their runners would otherwise retry a Redis
  // that is gone, forever.
  if (state.redis && isAlive(state.redis.pid)) {
    const { lines, unreached } = await teardownAll(cluster, state.redis.url);
    stopped.push(...lines);
    // Containers on an engine we cannot reach would loop on a Redis that is gone: keep the stack
    // (and the records that name those engines) until they can be removed.
    if (unreached.length) {
      for (const l of stopped) process.stdout.write(`${l}\n`);
      throw runtimeError(`the stack stays up: containers of its deployments may still run where teardown could not reach: ${unreached.join('; ')}`, {
        hint: 'start those engines (or fix their endpoints), then `jupiter teardown <app> --stack` or `jupiter stack down` again',
      });
    }
  }
  stopped.push(...(await removeNodeAgents(cluster, cluster.redisUrl ?? state.redis?.url)));
  for (const [node, agent] of Object.entries(state.agents ?? {})) {
    if (isAlive(agent.pid)) stopped.push(`stopped agent ${node} (pid ${agent.pid})`);
    await stopPid(agent.pid);
  }
  if (state.hub) {
    if (isAlive(state.hub.pid)) stopped.push(`stopped hub (pid ${state.hub.pid})`);
    await stopPid(state.hub.pid);
  }
  stopped.push(...(await stopPrivateEngine(dir, state)));
  if (state.redis) {
    if (isAlive(state.redis.pid)) stopped.push(`stopped redis-server (pid ${state.redis.pid})`);
    await stopPid(state.redis.pid, 10_000);
  }
  writeStackState(dir, {});
  return stopped;
}
