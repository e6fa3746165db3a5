// Publisher settings for a configured (external) broker, from the cluster configuration plus the
// environment: TLS files for mqtts:// / wss:// brokers with a private CA, and the WebSocket URL
// browsers use when the configured URL is a TCP one.
import { readFileSync } from 'node:fs';
import type { ClusterConfig } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import type { PublisherOptions } from './publisher.js';
import type { BrokerForBrowser } from '../dashboard/server.js';

function pem(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const file = env[name];
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw inputError(`${name}=${file}: ${(e as Error).message}`, { hint: `${name} must name a readable PEM file` });
  }
}

/**
 * The bridge's publisher options for cluster.mqtt.url (undefined when no broker is configured).
 * Environment: JUPITER_MQTT_CA, JUPITER_MQTT_CERT, JUPITER_MQTT_KEY (PEM files),
 * JUPITER_MQTT_INSECURE=1 (accept any server certificate; for test set-ups only).
 */
export function publisherOptionsFromCluster(cluster: ClusterConfig, env: NodeJS.ProcessEnv = process.env): (PublisherOptions & { compat: boolean }) | undefined {
  const url = cluster.mqtt.url;
  if (!url) return undefined;
  const tls = { ca: pem(env, 'JUPITER_MQTT_CA'), cert: pem(env, 'JUPITER_MQTT_CERT'), key: pem(env, 'JUPITER_MQTT_KEY') };
  const insecure = env.JUPITER_MQTT_INSECURE === '1';
  const anyTls = tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined || insecure;
  return {
    url,
    username: cluster.mqtt.username,
    password: cluster.mqtt.password,
    compat: cluster.mqtt.compat,
    ...(anyTls ? { tls: { ...tls, ...(insecure ? { rejectUnauthorized: false } : {}) } } : {}),
  };
}

/**
 * Where a browser reaches the configured broker: JUPITER_MQTT_WS_URL, else the configured URL
 * itself when it is a ws:// or wss:// one (undefined: the page cannot connect and says so).
 */
export function browserBrokerFromCluster(cluster: ClusterConfig, env: NodeJS.ProcessEnv = process.env, wsUrl?: string): BrokerForBrowser | undefined {
  const url = wsUrl ?? env.JUPITER_MQTT_WS_URL ?? (/^wss?:/.test(cluster.mqtt.url ?? '') ? cluster.mqtt.url : undefined);
  if (!url) return undefined;
  return { url, username: cluster.mqtt.username, password: cluster.mqtt.password };
}
