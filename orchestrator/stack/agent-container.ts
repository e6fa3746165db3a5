// How a node agent's container is configured: the runners' sandbox (uid 10001, every capability
// dropped, no-new-privileges, read-only root with tmpfs scratch, CPU/memory/pids limits, no
// Docker socket, no bind mounts) plus host networking (its probe endpoint must be reachable by the
// other nodes' agents at the node's address) and a restart policy that brings a crashed agent back.
import { createHash } from 'node:crypto';
import type Docker from 'dockerode';
import type { ClusterConfig, NodeConfig } from '../../config/types.js';
import { RUNNER_UID } from '../../circe/runtime/docker-base.js';
import { LABEL_NODE, WORK_DIR } from '../../circe/runtime/docker-container.js';
import { AGENT_CLI } from './agent-image.js';

export const LABEL_ROLE = 'jupiter.role';
export const ROLE_AGENT = 'agent';
/** Which deployment (Redis endpoint + key prefix) the agent belongs to. */
export const LABEL_STACK = 'jupiter.stack';
/** Hash of everything the container was created with: a different one means stale. */
export const LABEL_AGENT_CONFIG = 'jupiter.agent.config';
export { LABEL_NODE };

/**
 * The deployment's identity: the Redis server it uses (host, port, database; never the password)
 * and the key prefix. A private (embedded) Redis gets a new port on every `stack up`, so there the
 * state folder stands for it.
 */
export function stackId(cluster: ClusterConfig, redisUrl: string): string {
  let where = `embedded:${cluster.stateDir}`;
  if (cluster.redisUrl) {
    try {
      const u = new URL(redisUrl);
      where = `${u.protocol}//${u.hostname}:${u.port || '6379'}${u.pathname}`;
    } catch {
      where = 'unparsable';
    }
  }
  return createHash('sha256').update(`${where}\n${cluster.redisPrefix}`).digest('hex').slice(0, 12);
}

/** Container names are [a-zA-Z0-9][a-zA-Z0-9_.-]+; node names are SAFE_NAME already. */
export function agentContainerName(node: string, stack: string): string {
  return `jupiter-agent-${node}-${stack}`.replace(/[^a-zA-Z0-9_.-]/g, '_');
}

/** The configuration's network profiler settings as `jupiter agent` flags. */
export function agentProfilerArgs(cluster: ClusterConfig): string[] {
  const p = cluster.profiling;
  if (!p) return [];
  return [
    ...(p.probeSizesKb ? ['--probe-sizes', p.probeSizesKb.join(',')] : []),
    ...(p.bootstrapRounds !== undefined ? ['--bootstrap-rounds', String(p.bootstrapRounds)] : []),
    ...(p.refreshSec !== undefined ? ['--refresh', String(p.refreshSec)] : []),
    ...(p.probeTimeoutSec !== undefined ? ['--probe-timeout', String(p.probeTimeoutSec)] : []),
    // A container agent has no configuration file to read the budget from.
    ...(p.probeBudget !== undefined ? ['--probe-budget', String(p.probeBudget)] : []),
  ];
}

/** Where the agent listens: the configured agent address, else the node's host on any free port. */
export function agentListen(node: NodeConfig): string {
  const host = node.agent?.host ?? node.host;
  const shown = host.includes(':') ? `[${host}]` : host;
  return `${shown}:${node.agent?.port ?? 0}`;
}

export interface AgentContainerInput {
  node: NodeConfig;
  image: string;
  cluster: ClusterConfig;
  /** Reaches the agent through its environment only. */
  redisUrl: string;
  stack: string;
}

/** Create options of one node's agent container (labels include the hash of the rest). */
export function agentContainerOptions(input: AgentContainerInput): Docker.ContainerCreateOptions {
  const { node, image, cluster, redisUrl, stack } = input;
  const docker = cluster.docker;
  const memory = Math.round(docker.memoryMb * 1024 * 1024);
  const tmpfsMb = Math.max(16, Math.floor(docker.memoryMb / 2));
  const opts: Docker.ContainerCreateOptions = {
    name: agentContainerName(node.name, stack),
    Image: image,
    // The prefix is no secret; the Redis URL (maybe with a password) stays out of the command line,
    // which `docker inspect` and `ps` show to anyone who can see them.
    // A node's declared CPU limit: the agent cannot see a quota on its engine's parent cgroup.
    Cmd: ['agent', '--node', node.name, '--listen', agentListen(node), '--prefix', cluster.redisPrefix, ...agentProfilerArgs(cluster),
      ...(node.cpus !== undefined ? ['--cpus', String(node.cpus)] : [])],
    Env: [
      `JUPITER_REDIS_URL=${redisUrl}`,
      `HOME=${WORK_DIR}`,
      'NODE_ENV=production',
      'PYTHONUNBUFFERED=1',
      'PYTHONDONTWRITEBYTECODE=1',
    ],
    Entrypoint: ['node', AGENT_CLI],
    User: `${RUNNER_UID}:${RUNNER_UID}`,
    WorkingDir: WORK_DIR,
    StopTimeout: 5,
    HostConfig: {
      NetworkMode: 'host',
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Tmpfs: {
        [WORK_DIR]: `rw,nosuid,nodev,size=${tmpfsMb}m,uid=${RUNNER_UID},gid=${RUNNER_UID},mode=0700`,
        // The execution profiler runs the app's tasks in a temporary folder.
        '/tmp': `rw,nosuid,nodev,size=${tmpfsMb}m,mode=1777`,
      },
      // The same share a runner gets: the execution profile then measures what a runner will see.
      NanoCpus: Math.round(docker.cpus * 1e9),
      Memory: memory,
      MemorySwap: memory,
      PidsLimit: 256,
      Init: true,
      // An agent is a service: back after a crash and after an engine restart, until `stack down`.
      RestartPolicy: { Name: 'unless-stopped' },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
    },
  };
  const hash = createHash('sha256').update(JSON.stringify(opts)).digest('hex').slice(0, 16);
  opts.Labels = { [LABEL_ROLE]: ROLE_AGENT, [LABEL_NODE]: node.name, [LABEL_STACK]: stack, [LABEL_AGENT_CONFIG]: hash };
  return opts;
}
