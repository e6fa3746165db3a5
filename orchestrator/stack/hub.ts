// The hub: the embedded stack's long-lived process. It is the dashboard server (static page,
// /live telemetry relay, /metrics, /healthz) hosting the telemetry bridge, plus the embedded aedes broker unless an
// external MQTT broker is configured, and the reconciler that heals deployments when a node is
// lost. Runs until SIGTERM/SIGINT.
import type { ClusterConfig } from '../../config/types.js';
import { DashboardServer } from '../dashboard/server.js';
import { Reconciler } from '../heal/reconciler.js';
import { publisherOptionsFromCluster } from '../telemetry/mqtt-config.js';

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
    // The dashboard subscribes with these credentials itself; browsers never get them.
    mqtt: external,
    embeddedPorts: external ? undefined : { port: opts.mqttPort, wsPort: opts.wsPort },
    log: (line) => process.stderr.write(`${new Date().toISOString()} hub: ${line}\n`),
  });
  await server.start();
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} hub: ${line}\n`);
  log(`dashboard ${server.url}`);
  // Moves the tasks of lost nodes to surviving ones (see heal/reconciler.ts).
  const reconciler = new Reconciler({ redisUrl: opts.redisUrl, cluster, log }).start();
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await reconciler.stop();
  await server.stop();
}
