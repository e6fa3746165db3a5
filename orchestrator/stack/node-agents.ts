// Node agents as containers on each node's own Docker engine: for every node whose engine the
// configuration names (NodeConfig.agentOnEngine), `stack up` and `deploy` make sure one agent
// container of this deployment runs there; `stack status` shows them with their Redis heartbeat;
// `stack down` removes them. No one has to log in to a machine to start `jupiter agent`.
// Nodes without a named engine keep the embedded default's local agent processes (embedded.ts).
//
// Use (what `stack up` does; the testbed uses the same path):
//   const started = await ensureNodeAgents(cluster, redisUrl);           // idempotent
//   const w = await waitForAgentHeartbeats(cluster, redisUrl, { started, timeoutMs: 30_000 });
//   ... nodeAgentStatus(cluster, redisUrl) ...; await removeNodeAgents(cluster, redisUrl);
import type Docker from 'dockerode';
import { JupiterError, inputError, runtimeError } from '../../config/errors.js';
import type { ClusterConfig, NodeConfig } from '../../config/types.js';
import { redisKeys } from '../../config/redis-keys.js';
import { clusterEngines, dockerClient, endpointKey, isLocalEndpoint, nodeEndpoint } from '../../circe/runtime/docker-engine.js';
import { isLoopbackUrl } from '../../circe/runtime/docker-container.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { defaultSources } from '../../circe/runtime/docker-image.js';
import { demuxLogs } from '../../circe/runtime/docker.js';
import { maskSecrets } from '../../circe/runtime/docker-progress.js';
import { deregister, liveAgents, type AgentRegistration } from '../../profilers/agent/registry.js';
import { agentImageEntries, ensureAgentImage } from './agent-image.js';
import {
  LABEL_AGENT_CONFIG, LABEL_NODE, LABEL_ROLE, LABEL_STACK, ROLE_AGENT, agentContainerName, agentContainerOptions, agentListen, stackId,
} from './agent-container.js';

export interface NodeAgentResult {
  node: string;
  /** The engine, as endpoint text without secrets (unix:///..., tcp://h:p, ssh://u@h:p). */
  engine: string;
  /** Container id (12 characters) and name. */
  container: string;
  name: string;
  image: string;
  /** kept = the running container already had this image and configuration. */
  action: 'started' | 'replaced' | 'kept';
  listen: string;
  /**
   * startedAt of the node's live registration in Redis before this call (undefined: none). A
   * started/replaced agent is up once a registration with another startedAt appears: the old one
   * lingers until its TTL, and comparing the agent's own stamps needs no synchronised clocks.
   */
  previousStartedAt?: number;
}

export interface NodeAgentStatus {
  node: string;
  engine: string;
  container?: string;
  name: string;
  /** running, restarting, exited, ... ; missing (no container); unreachable (engine error). */
  state: string;
  restarts?: number;
  /** Whether the node's heartbeat key is live in Redis; undefined when Redis could not be asked. */
  heartbeat?: boolean;
  /** host:port the agent registered (from Redis). */
  address?: string;
  error?: string;
}

const BUILDS_AT_ONCE = 4;

/** Run at most n of the given tasks at once. */
function limiter(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    // A finishing task hands its slot straight to the next waiting one.
    if (active >= n) await new Promise<void>((r) => waiting.push(r));
    else active++;
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** The live agent registrations in Redis by node; undefined when Redis cannot be asked. */
async function registrations(cluster: ClusterConfig, redisUrl: string): Promise<Map<string, AgentRegistration> | undefined> {
  const { connectRedis } = await import('../../circe/queue/connection.js');
  const redis = connectRedis(redisUrl, { name: 'jupiter:node-agents', failFast: true });
  try {
    return new Map((await liveAgents(redis, redisKeys(cluster.redisPrefix))).map((a) => [a.node, a]));
  } catch {
    return undefined;
  } finally {
    redis.disconnect();
  }
}

/** Nodes whose agent runs as a container on their engine. */
export function agentNodes(cluster: ClusterConfig): NodeConfig[] {
  return cluster.nodes.filter((n) => n.agentOnEngine && n.docker);
}

function engineOf(node: NodeConfig): { key: string; docker: Docker } {
  const ep = nodeEndpoint(node);
  return { key: endpointKey(ep), docker: dockerClient(ep) };
}

function engineError(node: string, key: string, e: unknown): Error {
  if (e instanceof JupiterError && e.kind === 'input') return e; // already explained (a base image missing, ...)
  return runtimeError(`the Docker engine of node ${node} (${key}) cannot run its agent: ${(e as Error).message}`, {
    hint: 'check that the engine runs and that nodes[].docker in jupiter.config.json names it',
  }, e);
}

/** How long an engine may take to answer the ping before a deploy touches anything. */
const PING_MS = 10_000;

/**
 * Every engine that is to run a node's agent answers a ping, or this throws the error
 * ensureNodeAgents would (engineError). Called before a node's local agent process is stopped:
 * a deploy whose engines are unreachable must leave the running deployment's agents alone, or
 * its nodes count as lost and the reconciler moves its tasks.
 */
export async function pingAgentEngines(cluster: ClusterConfig): Promise<void> {
  const names = new Set(agentNodes(cluster).map((n) => n.name));
  await Promise.all(clusterEngines(cluster).filter((e) => e.nodes.some((n) => names.has(n))).map(async ({ key, docker, nodes }) => {
    const node = nodes.find((n) => names.has(n))!;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PING_MS / 1000} s`)), PING_MS);
    });
    try {
      await Promise.race([docker.ping(), late]);
    } catch (e) {
      throw engineError(node, key, e);
    } finally {
      clearTimeout(timer);
    }
  }));
}

async function inspectOrUndefined(docker: Docker, name: string): Promise<Docker.ContainerInspectInfo | undefined> {
  try {
    return await docker.getContainer(name).inspect();
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return undefined;
    throw e;
  }
}

/**
 * Make sure every node with a named engine runs this deployment's agent container there (one per
 * node; built images are cached per engine). A running container with the same image and
 * configuration is kept; a dead or different one is replaced. `nodes` limits it to those names.
 */
export async function ensureNodeAgents(
  cluster: ClusterConfig,
  redisUrl: string,
  opts: { nodes?: string[]; onProgress?: (msg: string) => void } = {},
): Promise<NodeAgentResult[]> {
  const nodes = agentNodes(cluster).filter((n) => !opts.nodes || opts.nodes.includes(n.name));
  if (nodes.length === 0) return [];
  const say = opts.onProgress ?? (() => undefined);
  // Agents use host networking: a loopback Redis is only there for engines on this machine.
  const remote = nodes.find((n) => !isLocalEndpoint(nodeEndpoint(n)));
  if (remote && isLoopbackUrl(redisUrl)) {
    throw inputError(`the agent of ${remote.name} would run on ${endpointKey(nodeEndpoint(remote))}, which cannot reach Redis at ${maskUrl(redisUrl)} (this machine's loopback)`, {
      hint: 'set redis.url in jupiter.config.json (or JUPITER_REDIS_URL) to an address every node can reach',
    });
  }
  const stack = stackId(cluster, redisUrl);
  const sources = defaultSources();
  const entries = agentImageEntries(sources);
  // One image build per engine (several nodes may share an engine), at most BUILDS_AT_ONCE engines
  // at a time: each build packs and sends the base and dependency layers from this machine.
  const images = new Map<string, Promise<string>>();
  const slots = limiter(BUILDS_AT_ONCE);
  const imageOn = (node: NodeConfig): Promise<string> => {
    const { key, docker } = engineOf(node);
    let p = images.get(key);
    if (!p) {
      p = slots(() => ensureAgentImage(docker, cluster.docker.baseImage, (m) => say(`${node.name}: ${m}`), sources, entries))
        .then((r) => r.tag)
        .catch((e: unknown) => { throw engineError(node.name, key, e); });
      images.set(key, p);
    }
    return p;
  };
  const before = await registrations(cluster, redisUrl);
  return Promise.all(nodes.map(async (node): Promise<NodeAgentResult> => {
    const { key, docker } = engineOf(node);
    const image = await imageOn(node);
    const create = agentContainerOptions({ node, image, cluster, redisUrl, stack });
    const name = create.name as string;
    const base = { node: node.name, engine: key, name, image, listen: agentListen(node), previousStartedAt: before?.get(node.name)?.startedAt };
    try {
      const found = await inspectOrUndefined(docker, name);
      if (found && found.State.Status === 'running' && found.Config.Labels?.[LABEL_AGENT_CONFIG] === create.Labels?.[LABEL_AGENT_CONFIG]) {
        return { ...base, container: found.Id.slice(0, 12), action: 'kept' };
      }
      if (found) await docker.getContainer(found.Id).remove({ force: true });
      const c = await docker.createContainer(create);
      await c.start();
      say(`${node.name}: agent container ${c.id.slice(0, 12)} ${found ? 'replaced' : 'started'} on ${key}`);
      return { ...base, container: c.id.slice(0, 12), action: found ? 'replaced' : 'started' };
    } catch (e) {
      throw engineError(node.name, key, e);
    }
  }));
}

/** Where each node's agent container runs, its state, and whether its heartbeat is live in Redis. */
export async function nodeAgentStatus(cluster: ClusterConfig, redisUrl: string | undefined): Promise<NodeAgentStatus[]> {
  const nodes = agentNodes(cluster);
  if (nodes.length === 0) return [];
  // Redis unreachable: heartbeats unknown.
  const regs = redisUrl ? await registrations(cluster, redisUrl) : undefined;
  const live = regs && new Map([...regs].map(([n, a]) => [n, `${a.host}:${a.port}`]));
  const stack = redisUrl ? stackId(cluster, redisUrl) : undefined;
  return Promise.all(nodes.map(async (node): Promise<NodeAgentStatus> => {
    const { key, docker } = engineOf(node);
    const out: NodeAgentStatus = {
      node: node.name, engine: key, name: stack ? agentContainerName(node.name, stack) : '-', state: 'missing',
      heartbeat: live ? live.has(node.name) : undefined, address: live?.get(node.name),
    };
    try {
      const found = await listAgentContainers(docker, node.name, stack);
      const c = found[0];
      if (c) {
        const info = await docker.getContainer(c.Id).inspect();
        Object.assign(out, { container: c.Id.slice(0, 12), name: c.Names[0]?.replace(/^\//, '') ?? out.name, state: info.State.Status, restarts: info.RestartCount });
      }
    } catch (e) {
      Object.assign(out, { state: 'unreachable', error: (e as Error).message });
    }
    return out;
  }));
}

/** This deployment's agent containers of a node on an engine (any deployment's when stack is undefined). */
async function listAgentContainers(docker: Docker, node: string, stack: string | undefined): Promise<Docker.ContainerInfo[]> {
  const label = [`${LABEL_ROLE}=${ROLE_AGENT}`, `${LABEL_NODE}=${node}`];
  if (stack) label.push(`${LABEL_STACK}=${stack}`);
  return docker.listContainers({ all: true, filters: { label } });
}

async function forget(cluster: ClusterConfig, redisUrl: string, node: string): Promise<void> {
  const { connectRedis } = await import('../../circe/queue/connection.js');
  const redis = connectRedis(redisUrl, { name: 'jupiter:node-agents', failFast: true });
  try {
    await deregister(redis, redisKeys(cluster.redisPrefix), node);
  } catch {
    // Redis gone too: the key expires by itself
  } finally {
    redis.disconnect();
  }
}

/**
 * Remove the agent containers of every node with a named engine; returns one line per container
 * removed or engine that could not be reached. Without a Redis URL (the deployment cannot be told
 * apart), every Jupiter agent container of those nodes on their engines goes.
 */
export async function removeNodeAgents(cluster: ClusterConfig, redisUrl: string | undefined): Promise<string[]> {
  const stack = redisUrl ? stackId(cluster, redisUrl) : undefined;
  const lines = await Promise.all(agentNodes(cluster).map(async (node): Promise<string[]> => {
    const { key, docker } = engineOf(node);
    try {
      const out: string[] = [];
      for (const c of await listAgentContainers(docker, node.name, stack)) {
        // Removal kills the agent (no clean exit): its registration goes with it, not a TTL later.
        await docker.getContainer(c.Id).remove({ force: true });
        if (redisUrl) await forget(cluster, redisUrl, node.name);
        out.push(`removed agent container ${c.Names[0]?.replace(/^\//, '') ?? ''} (${c.Id.slice(0, 12)}) of ${node.name} from ${key}`);
      }
      return out;
    } catch (e) {
      return [`could not remove the agent of ${node.name} from ${key}: ${(e as Error).message}`];
    }
  }));
  return lines.flat();
}

export interface HeartbeatWait {
  /** Nodes whose heartbeat is live in Redis. */
  live: string[];
  /** Nodes still without one at the deadline, with the last lines their container logged (passwords masked). */
  missing: Array<{ node: string; engine: string; state: string; logTail: string }>;
}

/**
 * Wait until the agents of `nodes` (default: every node with a named engine) heartbeat in Redis.
 * An agent that cannot reach Redis from its node never does: its log tail then says why.
 */
export async function waitForAgentHeartbeats(
  cluster: ClusterConfig, redisUrl: string, opts: { nodes?: string[]; timeoutMs?: number; started?: NodeAgentResult[] } = {},
): Promise<HeartbeatWait> {
  const want = opts.nodes ?? opts.started?.map((a) => a.node) ?? agentNodes(cluster).map((n) => n.name);
  // For agents this call's caller (re)started: a registration older than the start does not count.
  const stale = new Map((opts.started ?? []).filter((a) => a.action !== 'kept' && a.previousStartedAt !== undefined).map((a) => [a.node, a.previousStartedAt]));
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let live: string[] = [];
  for (;;) {
    const now = (await registrations(cluster, redisUrl)) ?? new Map<string, AgentRegistration>();
    live = want.filter((n) => now.has(n) && now.get(n)!.startedAt !== stale.get(n));
    if (live.length === want.length || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const stack = stackId(cluster, redisUrl);
  const missing = await Promise.all(want.filter((n) => !live.includes(n)).map(async (name) => {
    const node = cluster.nodes.find((n) => n.name === name);
    if (!node?.docker) return { node: name, engine: '-', state: 'no engine', logTail: '' };
    const { key, docker } = engineOf(node);
    try {
      const c = docker.getContainer(agentContainerName(name, stack));
      const info = await c.inspect();
      const buf = (await c.logs({ stdout: true, stderr: true, tail: 6, follow: false })) as unknown as Buffer;
      return { node: name, engine: key, state: `${info.State.Status}, ${info.RestartCount} restarts`, logTail: maskSecrets(demuxLogs(buf).combined).trim() };
    } catch (e) {
      return { node: name, engine: key, state: 'unknown', logTail: (e as Error).message };
    }
  }));
  return { live, missing };
}
