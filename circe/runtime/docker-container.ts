// How one task's runner container is configured: labels, environment contract, hardening, limits.
import type Docker from 'dockerode';
import type { ClusterConfig } from '../../config/types.js';
import type { RunnerSpec } from './types.js';
import { RUNNER_UID } from './docker-base.js';
import { containerAppDir } from './docker-image.js';
import { MALLOC_ENV } from './malloc-env.js';
import { runnerNodeFlags } from './node-flags.js';

export const LABEL_APP = 'jupiter.app';
export const LABEL_TASK = 'jupiter.task';
export const LABEL_NODE = 'jupiter.node';
export const LABEL_RUN = 'jupiter.run';
/** In bridge networking, the host as seen from a container (Docker's host-gateway alias). */
export const HOST_ALIAS = 'host.docker.internal';
export const RUNNER_ENTRY = '/jupiter/dist/circe/runner/main.js';
export const WORK_DIR = '/jupiter/work';
/**
 * The node's store of the direct data path (circe/dataplane): a named volume per deployment and
 * node, so that a restarted runner container still holds the outputs its receivers have not
 * taken. Its owner (uid 10001, mode 0700) comes from the base image's mount point.
 */
export const DATA_DIR = '/jupiter/data';

/** Volume names follow container names' rule. */
export function dataVolumeName(app: string, node: string): string {
  return `jupiter-data-${app}-${node}`.replace(/[^a-zA-Z0-9_.-]/g, '_');
}

/** Container names are [a-zA-Z0-9][a-zA-Z0-9_.-]+; app and task names are SAFE_NAME already. */
export function containerName(app: string, task: string): string {
  return `jupiter-${app}-${task}`.replace(/[^a-zA-Z0-9_.-]/g, '_');
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1', '0.0.0.0']);

export function isLoopbackUrl(url: string): boolean {
  try {
    return LOOPBACK.has(new URL(url).hostname);
  } catch {
    return false;
  }
}

/**
 * The Redis URL a container uses: unchanged with host networking; in bridge networking a loopback
 * host becomes host.docker.internal (the Redis server must then listen on the bridge gateway).
 */
export function containerRedisUrl(url: string, network: 'host' | 'bridge'): string {
  if (network === 'host' || !isLoopbackUrl(url)) return url;
  const u = new URL(url);
  u.hostname = HOST_ALIAS;
  return u.toString().replace(/\/$/, '');
}

/** The JUPITER_* environment contract of circe/runner/main.ts. The Redis URL (maybe with a password) only lives here. */
export function runnerEnv(spec: RunnerSpec, network: 'host' | 'bridge'): string[] {
  return [
    `JUPITER_APP=${spec.app}`,
    `JUPITER_APP_DIR=${containerAppDir(spec.app)}`,
    `JUPITER_TASK=${spec.task}`,
    `JUPITER_NODE=${spec.node}`,
    `JUPITER_RUN_ID=${spec.runId}`,
    `JUPITER_REDIS_URL=${containerRedisUrl(spec.redisUrl, network)}`,
    `JUPITER_REDIS_PREFIX=${spec.redisPrefix}`,
    `JUPITER_WORK_DIR=${WORK_DIR}`,
    `JUPITER_DATA_DIR=${DATA_DIR}`,
    `HOME=${WORK_DIR}`,
    'NODE_ENV=production',
    'PYTHONUNBUFFERED=1',
    'PYTHONDONTWRITEBYTECODE=1',
    ...Object.entries(MALLOC_ENV).map(([k, v]) => `${k}=${v}`),
  ];
}

export interface ContainerOverrides {
  /** Replace the runner command (tests of the sandbox itself). */
  cmd?: string[];
  /** A non-DAG helper task runs once: a failing one is retried a few times, not forever. */
  helper?: boolean;
}

/** Create options of one task's container. */
export function containerOptions(
  spec: RunnerSpec, image: string, docker: ClusterConfig['docker'], overrides: ContainerOverrides = {},
): Docker.ContainerCreateOptions {
  const memory = Math.round(docker.memoryMb * 1024 * 1024);
  // tmpfs pages count against the memory limit; give each scratch folder a share of it.
  const tmpfsMb = Math.max(16, Math.floor(docker.memoryMb / 2));
  const bridge = docker.network === 'bridge';
  return {
    name: containerName(spec.app, spec.task),
    Image: image,
    Cmd: overrides.cmd ?? ['node', ...runnerNodeFlags(docker.memoryMb), RUNNER_ENTRY],
    Env: runnerEnv(spec, docker.network),
    User: `${RUNNER_UID}:${RUNNER_UID}`,
    WorkingDir: WORK_DIR,
    Labels: { [LABEL_APP]: spec.app, [LABEL_TASK]: spec.task, [LABEL_NODE]: spec.node, [LABEL_RUN]: spec.runId },
    StopTimeout: 5,
    HostConfig: {
      NetworkMode: bridge ? 'bridge' : 'host',
      ExtraHosts: bridge ? [`${HOST_ALIAS}:host-gateway`] : undefined,
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      Mounts: [{
        Type: 'volume', Source: dataVolumeName(spec.app, spec.node), Target: DATA_DIR,
        // NoCopy false: a new volume takes the owner and mode of the image's mount point.
        VolumeOptions: { NoCopy: false, Labels: { [LABEL_APP]: spec.app, [LABEL_NODE]: spec.node }, DriverConfig: { Name: 'local', Options: {} } },
      }],
      Tmpfs: {
        [WORK_DIR]: `rw,nosuid,nodev,size=${tmpfsMb}m,uid=${RUNNER_UID},gid=${RUNNER_UID},mode=0700`,
        '/tmp': `rw,nosuid,nodev,size=${tmpfsMb}m,mode=1777`,
      },
      NanoCpus: Math.round(docker.cpus * 1e9),
      Memory: memory,
      MemorySwap: memory,
      PidsLimit: 256,
      // Reaps the python worker's children and forwards SIGTERM to node (PID 1 ignores it otherwise).
      Init: true,
      // on-failure: a crashed runner comes back (its in-flight job is redelivered by BullMQ) while a
      // runner that exits 0 stays down; unless-stopped also survives an engine restart.
      RestartPolicy: overrides.helper ? { Name: 'on-failure', MaximumRetryCount: 3 }
        : docker.restart === 'unless-stopped' ? { Name: 'unless-stopped' } : { Name: 'on-failure', MaximumRetryCount: 0 },
      LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
    },
  };
}
