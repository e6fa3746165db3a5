// The hub: the embedded stack's long-lived process. It is the dashboard server (static page,
// /metrics, /healthz) hosting the telemetry bridge, plus the embedded aedes broker unless an
// external MQTT broker is configured. Runs until SIGTERM/SIGINT.
import type { ClusterConfig } from '../../config/types.js';
import { DashboardServer } from '../dashboard/server.js';
import { browserBrokerFromCluster, publisherOptionsFromCluster } from '../telemetry/mqtt-config.js';

export interface HubOptions {
  cluster: ClusterConfig;
  redisUrl: string;
  httpPort: number;
  /** Embedded broker ports; ignored when the cluster names an external broker. */
  mqttPort?: number;
  wsPort?: number;
}

export async function runHub(opts: HubOptions): Promise<void> {
  const { cluster } = opts;
  const external = publisherOptionsFromCluster(cluster);
  const server = new DashboardServer({
    redisUrl: opts.redisUrl,
    prefix: cluster.redisPrefix,
    port: opts.httpPort,
    mqtt: external,
    browserBroker: browserBrokerFromCluster(cluster),
    embeddedPorts: external ? undefined : { port: opts.mqttPort, wsPort: opts.wsPort },
    log: (line) => process.stderr.write(`${new Date().toISOString()} hub: ${line}\n`),
  });
  await server.start();
  process.stderr.write(`${new Date().toISOString()} hub: dashboard ${server.url}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await server.stop();
}
