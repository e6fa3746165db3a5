// Publisher settings for a configured (external) broker, from the cluster configuration: TLS
// files for mqtts:// / wss:// brokers with a private CA (mqtt.tls, or JUPITER_MQTT_CA/_CERT/_KEY/
// _INSECURE: the loader in config/cluster/mqtt-tls.ts resolves and checks them).
import { readFileSync } from 'node:fs';
import type { ClusterConfig } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import type { PublisherOptions } from './publisher.js';

function pem(file: string | undefined, name: string): string | undefined {
  if (file === undefined) return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw inputError(`mqtt.tls.${name}: ${file}: ${(e as Error).message}`, { hint: `mqtt.tls.${name} must name a readable PEM file` });
  }
}

/** The bridge's publisher options for cluster.mqtt.url (undefined when no broker is configured). */
export function publisherOptionsFromCluster(cluster: ClusterConfig): (PublisherOptions & { compat: boolean }) | undefined {
  const url = cluster.mqtt.url;
  if (!url) return undefined;
  const t = cluster.mqtt.tls;
  const tls: NonNullable<PublisherOptions['tls']> | undefined = t && {
    ...(t.ca !== undefined ? { ca: pem(t.ca, 'ca') } : {}),
    ...(t.cert !== undefined ? { cert: pem(t.cert, 'cert') } : {}),
    ...(t.key !== undefined ? { key: pem(t.key, 'key') } : {}),
    ...(t.rejectUnauthorized !== undefined ? { rejectUnauthorized: t.rejectUnauthorized } : {}),
  };
  return {
    url,
    username: cluster.mqtt.username,
    password: cluster.mqtt.password,
    compat: cluster.mqtt.compat,
    ...(tls ? { tls } : {}),
  };
}
