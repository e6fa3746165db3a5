// JSON schema of jupiter.config.json, the cluster configuration. Every key is optional: what is
// left out comes from nodes.txt, the environment (JUPITER_*) or the embedded default.

import { adaptSectionSchema, profilingSectionSchema, type AdaptSectionFile, type ProfilingSectionFile } from './adapt-config.js';
const nodeName = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$', maxLength: 64 } as const;
const hostName = {
  type: 'string', minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9._:\\[\\]-]+$',
  description: 'host name or IP address of the machine',
} as const;

export const clusterConfigSchema = {
  $id: 'https://jupiter.dev/schemas/jupiter.config.json',
  title: 'jupiter.config.json: where Jupiter runs',
  type: 'object',
  properties: {
    $schema: { type: 'string' },
    redis: {
      type: 'object',
      description: 'The Redis that carries queues, profiles and state. Leave out url for a private redis-server started by Jupiter.',
      properties: {
        url: { type: 'string', pattern: '^rediss?://', description: 'redis://[user:password@]host:port[/db] or rediss:// for TLS (env JUPITER_REDIS_URL)' },
        prefix: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,64}$', description: 'prefix of every key Jupiter writes (default "jupiter:")' },
      },
      additionalProperties: false,
    },
    mqtt: {
      type: 'object',
      description: 'MQTT broker for telemetry. Leave out url for a private broker started by Jupiter.',
      properties: {
        url: { type: 'string', pattern: '^(mqtts?|wss?|tcp|tls)://', description: 'mqtt://host:1883, mqtts://, ws:// or wss:// (env JUPITER_MQTT_URL)' },
        username: { type: 'string', description: 'env JUPITER_MQTT_USERNAME' },
        password: { type: 'string', description: 'env JUPITER_MQTT_PASSWORD; prefer the environment over this file' },
        compat: { type: 'boolean', description: 'also publish the original Jupiter topic JUPITER with its plain-text payloads (default false)' },
        tls: {
          type: 'object',
          description: 'TLS for mqtts:// and wss:// brokers: PEM files, paths relative to this file',
          properties: {
            ca: { type: 'string', minLength: 1, description: 'CA that signed the broker certificate (env JUPITER_MQTT_CA); default: the system CAs' },
            cert: { type: 'string', minLength: 1, description: 'client certificate, for brokers that require one; needs key (env JUPITER_MQTT_CERT)' },
            key: { type: 'string', minLength: 1, description: 'private key of cert (env JUPITER_MQTT_KEY)' },
            rejectUnauthorized: { type: 'boolean', description: 'false accepts any broker certificate: test set-ups only (env JUPITER_MQTT_INSECURE=1); default true' },
          },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    mapper: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]*$', description: 'default task mapper, e.g. "heft" (env JUPITER_MAPPER)' },
    runtime: { enum: ['process', 'docker'], description: 'how task runners start: local processes or Docker containers (env JUPITER_RUNTIME)' },
    dataPath: { enum: ['central', 'direct'], description: 'where output bytes travel: "central" through the home\'s Redis (default), "direct" from the producing node to the receiving one' },
    stateDir: { type: 'string', minLength: 1, description: 'folder for the embedded stack and deployment state (default ".jupiter")' },
    adapt: adaptSectionSchema,
    profiling: profilingSectionSchema,
    docker: {
      type: 'object',
      description: 'container settings of the docker runtime',
      properties: {
        baseImage: { type: 'string', minLength: 1, description: 'image with node (and python3 for Python tasks); default "jupiter/base:local"' },
        network: { enum: ['host', 'bridge'], description: 'container network (default "host")' },
        cpus: { type: 'number', exclusiveMinimum: 0, maximum: 1024, description: 'CPU limit per container (default 1)' },
        memoryMb: { type: 'integer', minimum: 16, maximum: 1048576, description: 'memory limit per container in MiB (default 512)' },
        restart: { enum: ['on-failure', 'unless-stopped'], description: 'restart policy of task containers (default "on-failure": a crashed runner comes back, a clean exit stays down)' },
      },
      additionalProperties: false,
    },
    nodes: {
      type: 'array',
      minItems: 1,
      description: 'the machines: "home" first, then compute nodes. With a nodes.txt, entries add details to its nodes by name.',
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: nodeName,
          host: hostName,
          docker: {
            type: 'string',
            pattern: '^(unix|tcp|ssh)://',
            description: 'Docker engine of the node: unix:///var/run/docker.sock, tcp://host:2376 (with tls) or ssh://user@host[:port]',
          },
          tls: {
            type: 'object',
            description: 'TLS files for a tcp:// Docker endpoint (paths relative to this file)',
            properties: { ca: { type: 'string', minLength: 1 }, cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 } },
            additionalProperties: false,
          },
          agent: { type: 'string', pattern: '^[^\\s]+:\\d{1,5}$', description: 'host:port where the node agent listens for probes' },
          cpus: {
            type: 'number', exclusiveMinimum: 0, maximum: 1024,
            description: 'CPUs this node may use (cores, may be fractional, e.g. 0.5), when it gets less than its machine has (a CPU quota its processes cannot see: a parent cgroup, a VM\'s share); the mappers charge it. Default: what the node\'s agent reads from its own cgroup',
          },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

export interface ClusterConfigFile {
  $schema?: string;
  redis?: { url?: string; prefix?: string };
  mqtt?: { url?: string; username?: string; password?: string; compat?: boolean; tls?: MqttTlsFile };
  mapper?: string;
  runtime?: 'process' | 'docker';
  dataPath?: 'central' | 'direct';
  stateDir?: string;
  adapt?: AdaptSectionFile;
  profiling?: ProfilingSectionFile;
  docker?: { baseImage?: string; network?: 'host' | 'bridge'; cpus?: number; memoryMb?: number; restart?: 'on-failure' | 'unless-stopped' };
  nodes?: Array<{ name: string; host?: string; docker?: string; tls?: { ca?: string; cert?: string; key?: string }; agent?: string; cpus?: number }>;
}

/** mqtt.tls of jupiter.config.json: PEM file paths (relative to the file) and the verification switch. */
export interface MqttTlsFile {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
}

