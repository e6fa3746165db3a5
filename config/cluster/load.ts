// loadClusterConfig(): where Jupiter runs. Sources, later ones winning:
//   1. the embedded default (home + node1..node3 on this machine, process runtime, private Redis/MQTT);
//   2. jupiter.config.json (in opts.dir / the working directory, or the file named by JUPITER_CONFIG);
//   3. nodes.txt next to it (Jupiter's `<name> <host>` list; jupiter.config.json nodes add details by name);
//   4. the environment: JUPITER_REDIS_URL, JUPITER_MQTT_URL, JUPITER_MQTT_USERNAME,
//      JUPITER_MQTT_PASSWORD, JUPITER_MAPPER, JUPITER_RUNTIME, and the broker's TLS files
//      JUPITER_MQTT_CA, JUPITER_MQTT_CERT, JUPITER_MQTT_KEY, JUPITER_MQTT_INSECURE (mqtt-tls.ts).
import { existsSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { inputError } from '../errors.js';
import { ADAPT_DEFAULTS, DEFAULT_PROBE_BUDGET, HOME, type ClusterConfig, type DockerEndpoint, type NodeConfig, type RuntimeName } from '../types.js';
import { checkSchema, lineOfPointer, parseJsonText } from '../app/json.js';
import { displayPath, isFile, readTextFile } from '../app/text.js';
import { lazyValidator } from '../schemas/ajv.js';
import { clusterConfigSchema, type ClusterConfigFile } from '../schemas/cluster-config.js';
import { maskUrl } from './mask.js';
import { resolveMqttTls } from './mqtt-tls.js';
import { parseNodesTxt, type NodeLine } from './nodes-txt.js';
import { localDockerHost } from './local-docker.js';

export const CONFIG_FILE = 'jupiter.config.json';
export const NODES_FILE = 'nodes.txt';
export const DEFAULT_DOCKER_SOCKET = '/var/run/docker.sock';

export const CLUSTER_DEFAULTS = {
  mapper: 'heft',
  runtime: 'process' as RuntimeName,
  redisPrefix: 'jupiter:',
  stateDir: '.jupiter',
  docker: { baseImage: 'jupiter/base:local', network: 'host' as const, cpus: 1, memoryMb: 512 },
  localNodes: ['node1', 'node2', 'node3'],
};

export interface LoadClusterOptions {
  /** Folder holding jupiter.config.json / nodes.txt (default: the working directory). */
  dir?: string;
  /** Environment to read JUPITER_* from (default: process.env). */
  env?: NodeJS.ProcessEnv;
}

const validateFile = lazyValidator<ClusterConfigFile>(clusterConfigSchema);

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}

/** `host:port` (or `[v6]:port`) -> parts; undefined when malformed. */
export function parseHostPort(s: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$/.exec(s);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
}

/** Docker endpoint from its URL form: unix:///path, tcp://host:port, ssh://[user@]host[:port]. */
export function parseDockerEndpoint(url: string, tls?: { ca?: string; cert?: string; key?: string }): DockerEndpoint | string {
  if (url.startsWith('unix://')) {
    const socketPath = url.slice('unix://'.length);
    if (!socketPath.startsWith('/')) return 'a unix endpoint needs an absolute socket path: unix:///var/run/docker.sock';
    if (tls) return 'tls applies to tcp:// endpoints only';
    return { kind: 'socket', socketPath };
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `cannot read ${JSON.stringify(url)} as a URL`;
  }
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (!host) return 'the endpoint has no host';
  if (u.pathname !== '' && u.pathname !== '/') return 'the endpoint must not have a path';
  if (u.protocol === 'tcp:') {
    const port = u.port ? Number(u.port) : tls ? 2376 : 2375;
    return tls ? { kind: 'tcp', host, port, tls } : { kind: 'tcp', host, port };
  }
  if (u.protocol === 'ssh:') {
    if (tls) return 'tls applies to tcp:// endpoints only';
    if (u.password) return 'no passwords in ssh endpoints: use an ssh key or agent';
    const ep: DockerEndpoint = { kind: 'ssh', host };
    if (u.port) ep.port = Number(u.port);
    if (u.username) ep.username = decodeURIComponent(u.username);
    return ep;
  }
  return `unsupported endpoint ${JSON.stringify(u.protocol)}: use unix://, tcp:// or ssh://`;
}

function checkUrl(url: string, protocols: string[], what: string, loc: { file?: string; line?: number }, hint: string): string {
  let ok = false;
  try {
    const u = new URL(url);
    ok = protocols.includes(u.protocol) && u.hostname !== '';
  } catch {
    ok = false;
  }
  if (!ok) throw inputError(`${what} ${JSON.stringify(maskUrl(url))} is not a ${protocols.map((p) => `${p}//`).join(' or ')} URL`, { ...loc, hint });
  return url;
}

const REDIS_PROTOCOLS = ['redis:', 'rediss:'];
const MQTT_PROTOCOLS = ['mqtt:', 'mqtts:', 'ws:', 'wss:', 'tcp:', 'tls:'];

/** The engine of nodes on this machine: DOCKER_HOST or the current Docker context, else the default socket. */
export function localDockerEndpoint(env: NodeJS.ProcessEnv): DockerEndpoint {
  const local = localDockerHost(env);
  if (!local) return { kind: 'socket', socketPath: DEFAULT_DOCKER_SOCKET };
  const ep = parseDockerEndpoint(local.url);
  if (typeof ep === 'string') {
    throw inputError(`${local.from} ${JSON.stringify(local.url)}: ${ep}`, { hint: 'unix:///var/run/docker.sock, tcp://host:2375 or ssh://user@host (TLS: give nodes[].docker and tls in jupiter.config.json)' });
  }
  return ep;
}

function defaultNodes(env: NodeJS.ProcessEnv): { home: NodeConfig; nodes: NodeConfig[] } {
  const local = (name: string): NodeConfig => ({ name, host: '127.0.0.1', docker: localDockerEndpoint(env) });
  return { home: local(HOME), nodes: CLUSTER_DEFAULTS.localNodes.map(local) };
}

async function buildNodes(file: ClusterConfigFile | undefined, text: string, jsonShown: string, jsonDir: string, nodesTxt: NodeLine[] | undefined, env: NodeJS.ProcessEnv): Promise<{ home: NodeConfig; nodes: NodeConfig[] } | undefined> {
  const entries = file?.nodes ?? [];
  if (!nodesTxt && entries.length === 0) return undefined;
  // Line of the i-th entry: where its "name" value appears after the "nodes" key.
  const entryLine = (i: number): number => {
    const from = text.indexOf('"nodes"');
    const at = text.indexOf(JSON.stringify(entries[i]!.name), from < 0 ? 0 : from);
    return at < 0 ? lineOfPointer(text, '/nodes') : text.slice(0, at).split('\n').length;
  };
  const list: NodeConfig[] = [];
  if (nodesTxt) {
    for (const n of nodesTxt) list.push({ name: n.name, host: n.host });
  }
  const seen = new Map<string, number>();
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const line = entryLine(i);
    if (seen.has(e.name)) throw inputError(`node ${e.name} is listed twice in nodes`, { file: jsonShown, line, hint: 'list each node once' });
    seen.set(e.name, i);
    let node = list.find((n) => n.name === e.name);
    if (!node) {
      if (nodesTxt) {
        throw inputError(`node ${e.name} is not in nodes.txt`, { file: jsonShown, line, hint: `nodes.txt lists: ${nodesTxt.map((n) => n.name).join(', ')}; add it there or fix the name` });
      }
      if (!e.host) throw inputError(`node ${e.name} has no host`, { file: jsonShown, line, hint: 'give "host": "<host name or IP>"' });
      if (list.length === 0 && e.name !== HOME) {
        throw inputError(`the first node must be ${HOME}, got ${e.name}`, { file: jsonShown, line, hint: `start "nodes" with {"name": "${HOME}", "host": ...}` });
      }
      node = { name: e.name, host: e.host };
      list.push(node);
    } else if (e.host) {
      node.host = e.host;
    }
    if (e.tls && !e.docker) throw inputError(`node ${e.name} has tls but no docker endpoint`, { file: jsonShown, line, hint: 'add "docker": "tcp://<host>:2376"' });
    if (e.docker) {
      let tls: { ca?: string; cert?: string; key?: string } | undefined;
      if (e.tls) {
        tls = {};
        for (const k of ['ca', 'cert', 'key'] as const) {
          const p = e.tls[k];
          if (p === undefined) continue;
          const abs = resolve(jsonDir, p);
          if (!(await isFile(abs))) throw inputError(`TLS ${k} file of ${e.name} not found: ${p}`, { file: jsonShown, line, hint: 'paths are relative to jupiter.config.json' });
          tls[k] = abs;
        }
      }
      const ep = parseDockerEndpoint(e.docker, tls);
      if (typeof ep === 'string') throw inputError(`docker endpoint of ${e.name}: ${ep}`, { file: jsonShown, line, hint: 'unix:///var/run/docker.sock, tcp://host:2376 with "tls", or ssh://user@host' });
      node.docker = ep;
      node.agentOnEngine = true;
    }
    if (e.agent) {
      const hp = parseHostPort(e.agent);
      if (!hp) throw inputError(`agent address of ${e.name} must be host:port, got ${JSON.stringify(e.agent)}`, { file: jsonShown, line, hint: 'e.g. "10.0.0.12:7070" (port 1-65535)' });
      node.agent = hp;
    }
    if (e.cpus !== undefined) node.cpus = e.cpus;
  }
  for (const n of list) if (!n.docker && isLoopback(n.host)) n.docker = localDockerEndpoint(env);
  const [home, ...nodes] = list as [NodeConfig, ...NodeConfig[]];
  if (nodes.length === 0) {
    throw inputError('no compute nodes: only the home is listed', { file: nodesTxt ? undefined : jsonShown, line: nodesTxt ? undefined : entryLine(0), hint: 'add at least one node after the home' });
  }
  return { home, nodes };
}

/** Parse and schema-check the text of a jupiter.config.json (`file` is only used in messages). */
export function parseClusterConfigText(text: string, file: string): ClusterConfigFile {
  const data = parseJsonText(text, file, CONFIG_FILE);
  checkSchema(validateFile(), data, text, file, 'see the documented schema in config/schemas/cluster-config.ts (keys: redis, mqtt, mapper, runtime, dataPath, stateDir, adapt, profiling, docker, nodes)');
  return data;
}

/** Load the cluster configuration (see the top of this file for the sources). */
export async function loadClusterConfig(opts: LoadClusterOptions = {}): Promise<ClusterConfig> {
  const env = opts.env ?? process.env;
  const dir = resolve(opts.dir ?? process.cwd());
  const sources: string[] = [];

  let jsonPath: string | undefined;
  if (env.JUPITER_CONFIG) {
    jsonPath = resolve(dir, env.JUPITER_CONFIG);
    if (!existsSync(jsonPath)) throw inputError(`JUPITER_CONFIG names a missing file: ${env.JUPITER_CONFIG}`, { hint: 'point JUPITER_CONFIG at a jupiter.config.json, or unset it' });
  } else if (existsSync(join(dir, CONFIG_FILE))) {
    jsonPath = join(dir, CONFIG_FILE);
  }
  const baseDir = jsonPath ? dirname(jsonPath) : dir;

  let file: ClusterConfigFile | undefined;
  let text = '';
  const jsonShown = jsonPath ? displayPath(jsonPath) : CONFIG_FILE;
  if (jsonPath) {
    text = await readTextFile(jsonPath, { what: CONFIG_FILE });
    file = parseClusterConfigText(text, jsonShown);
    sources.push(jsonShown);
  }

  let nodesTxt: NodeLine[] | undefined;
  const nodesPath = join(baseDir, NODES_FILE);
  if (await isFile(nodesPath)) {
    const shown = displayPath(nodesPath);
    nodesTxt = parseNodesTxt(await readTextFile(nodesPath, { what: NODES_FILE }), shown);
    sources.push(shown);
  }

  const topology = (await buildNodes(file, text, jsonShown, baseDir, nodesTxt, env)) ?? defaultNodes(env);

  let redisUrl = file?.redis?.url;
  if (redisUrl) checkUrl(redisUrl, REDIS_PROTOCOLS, 'redis.url', { file: jsonShown, line: lineOfPointer(text, '/redis/url') }, 'e.g. redis://10.0.0.1:6379 or rediss://user:password@host:6380');
  const mqtt: ClusterConfig['mqtt'] = { compat: file?.mqtt?.compat ?? false };
  if (file?.mqtt?.url) mqtt.url = checkUrl(file.mqtt.url, MQTT_PROTOCOLS, 'mqtt.url', { file: jsonShown, line: lineOfPointer(text, '/mqtt/url') }, 'e.g. mqtt://10.0.0.1:1883');
  if (file?.mqtt?.username !== undefined) mqtt.username = file.mqtt.username;
  if (file?.mqtt?.password !== undefined) mqtt.password = file.mqtt.password;
  let mapper = file?.mapper ?? CLUSTER_DEFAULTS.mapper;
  let runtime: RuntimeName = file?.runtime ?? CLUSTER_DEFAULTS.runtime;

  // Environment overrides.
  const used: string[] = [];
  if (env.JUPITER_REDIS_URL) {
    redisUrl = checkUrl(env.JUPITER_REDIS_URL, REDIS_PROTOCOLS, 'JUPITER_REDIS_URL', {}, 'e.g. JUPITER_REDIS_URL=redis://127.0.0.1:6379');
    used.push('JUPITER_REDIS_URL');
  }
  if (env.JUPITER_MQTT_URL) {
    mqtt.url = checkUrl(env.JUPITER_MQTT_URL, MQTT_PROTOCOLS, 'JUPITER_MQTT_URL', {}, 'e.g. JUPITER_MQTT_URL=mqtt://127.0.0.1:1883');
    used.push('JUPITER_MQTT_URL');
  }
  if (env.JUPITER_MQTT_USERNAME !== undefined) { mqtt.username = env.JUPITER_MQTT_USERNAME; used.push('JUPITER_MQTT_USERNAME'); }
  if (env.JUPITER_MQTT_PASSWORD !== undefined) { mqtt.password = env.JUPITER_MQTT_PASSWORD; used.push('JUPITER_MQTT_PASSWORD'); }
  if (env.JUPITER_MAPPER) {
    if (!/^[a-z0-9][a-z0-9_-]*$/.test(env.JUPITER_MAPPER)) throw inputError(`JUPITER_MAPPER ${JSON.stringify(env.JUPITER_MAPPER)} is not a mapper name`, { hint: 'e.g. JUPITER_MAPPER=heft' });
    mapper = env.JUPITER_MAPPER;
    used.push('JUPITER_MAPPER');
  }
  if (env.JUPITER_RUNTIME) {
    if (env.JUPITER_RUNTIME !== 'process' && env.JUPITER_RUNTIME !== 'docker') {
      throw inputError(`JUPITER_RUNTIME must be process or docker, got ${JSON.stringify(env.JUPITER_RUNTIME)}`, { hint: 'JUPITER_RUNTIME=process runs tasks as local processes; docker runs them in containers' });
    }
    runtime = env.JUPITER_RUNTIME;
    used.push('JUPITER_RUNTIME');
  }
  const tls = await resolveMqttTls({ file: file?.mqtt?.tls, text, jsonShown, jsonDir: baseDir, dir, env, url: mqtt.url, used });
  if (tls) mqtt.tls = tls;
  if (used.length) sources.push(`environment (${used.join(', ')})`);

  const config: ClusterConfig = {
    source: sources.length ? sources.join(' + ') : 'embedded default',
    embedded: redisUrl === undefined,
    mqtt,
    mapper,
    runtime,
    dataPath: file?.dataPath ?? 'central',
    home: topology.home,
    nodes: topology.nodes,
    docker: { ...CLUSTER_DEFAULTS.docker, ...file?.docker },
    redisPrefix: file?.redis?.prefix ?? CLUSTER_DEFAULTS.redisPrefix,
    stateDir: resolve(baseDir, file?.stateDir ?? CLUSTER_DEFAULTS.stateDir),
    adapt: { ...ADAPT_DEFAULTS, ...file?.adapt },
    profiling: { ...file?.profiling, probeBudget: file?.profiling?.probeBudget ?? DEFAULT_PROBE_BUDGET },
  };
  if (redisUrl !== undefined) config.redisUrl = redisUrl;
  // Relative to the configuration file, so that every shell using that file finds the same stack.
  config.stateDirOrigin = !jsonPath
    ? 'default .jupiter in the working directory: no jupiter.config.json'
    : file?.stateDir
      ? `stateDir ${JSON.stringify(file.stateDir)} of ${jsonShown}${isAbsolute(file.stateDir) ? '' : ', relative to its folder'}`
      : `default .jupiter next to ${jsonShown}`;
  return config;
}
