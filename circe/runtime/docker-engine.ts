// Which Docker engine serves which node, and a dockerode client for it.
// Endpoints: a unix socket, tcp (TLS when certificate files are given) or ssh (requests run
// `docker system dial-stdio` on the remote machine over SSH channels: see docker-ssh.ts for keys
// and host key checks).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import type Docker from 'dockerode';
import type { ClusterConfig, DockerEndpoint, NodeConfig } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import { SshDockerAgent } from './docker-ssh.js';

const require = createRequire(import.meta.url);

export const DEFAULT_SOCKET = '/var/run/docker.sock';

export interface Engine {
  /** Stable text naming the endpoint (no secrets): unix:///..., tcp://h:p, ssh://user@h:p. */
  key: string;
  endpoint: DockerEndpoint;
  docker: Docker;
  /** Nodes served by this engine. */
  nodes: string[];
}

/** The endpoint in DOCKER_HOST form (unix://, tcp://, ssh://), or undefined when not one of those. */
export function parseDockerHost(value: string | undefined): DockerEndpoint | undefined {
  if (!value) return undefined;
  if (value.startsWith('unix://')) return { kind: 'socket', socketPath: value.slice('unix://'.length) };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol === 'tcp:') return { kind: 'tcp', host: url.hostname, port: Number(url.port || 2375) };
  if (url.protocol === 'ssh:') {
    return { kind: 'ssh', host: url.hostname, port: url.port ? Number(url.port) : undefined, username: url.username || undefined };
  }
  return undefined;
}

/** The node's engine: its configured endpoint, else DOCKER_HOST, else the local socket. */
export function nodeEndpoint(node: NodeConfig, env: NodeJS.ProcessEnv = process.env): DockerEndpoint {
  return node.docker ?? parseDockerHost(env.DOCKER_HOST) ?? { kind: 'socket', socketPath: DEFAULT_SOCKET };
}

export function endpointKey(ep: DockerEndpoint): string {
  switch (ep.kind) {
    case 'socket': return `unix://${ep.socketPath}`;
    case 'tcp': return `${ep.tls ? 'tcp+tls' : 'tcp'}://${ep.host}:${ep.port}`;
    case 'ssh': return `ssh://${ep.username ? `${ep.username}@` : ''}${ep.host}:${ep.port ?? 22}`;
  }
}

/** true when containers on this engine share this machine's loopback (host networking). */
export function isLocalEndpoint(ep: DockerEndpoint): boolean {
  if (ep.kind === 'socket') return true;
  return ['127.0.0.1', 'localhost', '::1'].includes(ep.host);
}

/** A PEM value: the file it names, or the PEM text itself. */
function pem(value: string | undefined, what: string): string | undefined {
  if (!value) return undefined;
  if (value.includes('-----BEGIN')) return value;
  try {
    return readFileSync(value, 'utf8');
  } catch (e) {
    throw inputError(`cannot read the Docker TLS ${what} file ${value}: ${(e as Error).message}`, {
      hint: 'nodes[].docker.tls.{ca,cert,key} are paths of PEM files (as made by `dockerd --tlsverify` set-ups)',
    });
  }
}

/** Client options for an endpoint; env supplies SSH_AUTH_SOCK, JUPITER_SSH_KEY, JUPITER_SSH_KNOWN_HOSTS (ssh only). */
export function dockerOptions(ep: DockerEndpoint, env: NodeJS.ProcessEnv = process.env): Docker.DockerOptions {
  switch (ep.kind) {
    case 'socket':
      return { socketPath: ep.socketPath };
    case 'tcp':
      if (!ep.tls) return { protocol: 'http', host: ep.host, port: ep.port };
      return {
        protocol: 'https', host: ep.host, port: ep.port,
        ca: pem(ep.tls.ca, 'CA'), cert: pem(ep.tls.cert, 'certificate'), key: pem(ep.tls.key, 'key'),
      };
    case 'ssh':
      // Plain HTTP whose connections our agent opens as SSH channels (not docker-modem's 'ssh'
      // protocol: see docker-ssh.ts for why). Like ssh(1), no user name means the local one.
      return {
        protocol: 'http', host: ep.host, port: ep.port ?? 22,
        agent: new SshDockerAgent({ host: ep.host, port: ep.port ?? 22, username: ep.username ?? userInfo().username }, env),
      } as Docker.DockerOptions;
  }
}

/**
 * A dockerode client. dockerode is loaded on first use: importing it costs a process ~0.2 s of CPU,
 * and every CLI process that can deploy (and the hub) imports this module, most of them never
 * talking to an engine (the process runtime, status, teardown of a process deployment).
 */
export function newDocker(opts: Docker.DockerOptions): Docker {
  // A plain call of require on the name, so that the images' package scan (docker-image.ts) finds it.
  const Dockerode = require('dockerode') as typeof Docker;
  return new Dockerode(opts);
}

const clients = new Map<string, Docker>();

export function dockerClient(ep: DockerEndpoint): Docker {
  const key = endpointKey(ep);
  let client = clients.get(key);
  if (!client) {
    client = newDocker(dockerOptions(ep));
    clients.set(key, client);
  }
  return client;
}

/** Find a node (compute nodes, then the home) by name. */
export function findNode(cluster: ClusterConfig, name: string): NodeConfig | undefined {
  return cluster.nodes.find((n) => n.name === name) ?? (cluster.home.name === name ? cluster.home : undefined);
}

/** Every distinct engine of the cluster's compute nodes (and the home's, when it names one). */
export function clusterEngines(cluster: ClusterConfig, env: NodeJS.ProcessEnv = process.env): Engine[] {
  const byKey = new Map<string, Engine>();
  const nodes = cluster.home.docker ? [...cluster.nodes, cluster.home] : cluster.nodes;
  for (const node of nodes) {
    const endpoint = nodeEndpoint(node, env);
    const key = endpointKey(endpoint);
    const found = byKey.get(key);
    if (found) found.nodes.push(node.name);
    else byKey.set(key, { key, endpoint, docker: dockerClient(endpoint), nodes: [node.name] });
  }
  return [...byKey.values()];
}

/** The engine of one node. */
export function nodeEngine(cluster: ClusterConfig, nodeName: string, env: NodeJS.ProcessEnv = process.env): Engine {
  const node = findNode(cluster, nodeName);
  if (!node) {
    throw inputError(`node "${nodeName}" is not in the cluster configuration`, {
      file: cluster.source,
      hint: `known nodes: ${cluster.nodes.map((n) => n.name).join(', ')}`,
    });
  }
  const engine = clusterEngines(cluster, env).find((e) => e.nodes.includes(nodeName));
  if (!engine) throw inputError(`node "${nodeName}" has no Docker engine`, { file: cluster.source });
  return engine;
}
