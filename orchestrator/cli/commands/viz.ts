// `jupiter viz`: serve the live dashboard (and /metrics) on this machine until Ctrl-C.
import type { Command } from 'commander';
import { loadClusterConfig } from '../../../config/cluster/load.js';
import { maskUrl } from '../../../config/cluster/mask.js';
import { inputError, runtimeError } from '../../../config/errors.js';
import { SAFE_NAME } from '../../../config/types.js';
import { action } from '../run.js';
import { stackEndpoints } from '../../stack/endpoints.js';
import type { DashboardOptions } from '../../dashboard/server.js';
import { publisherOptionsFromCluster } from '../../telemetry/mqtt-config.js';

interface VizOptions {
  port: string;
  host: string;
  app?: string;
  redis?: string;
}

export function register(program: Command): void {
  program
    .command('viz')
    .description('serve the live dashboard: task graph, nodes, throughput, mapping, predicted schedule; /metrics for Prometheus')
    .option('-p, --port <port>', 'HTTP port', '8080')
    .option('--host <address>', 'address to listen on (the page shows all telemetry, without authentication: keep it local or behind a proxy)', '127.0.0.1')
    .option('-a, --app <name>', 'app to show first (default: the first deployed app)')
    .option('--redis <url>', 'Redis of the deployment (default: configured or the embedded stack\'s)')
    .action(action(async (opts: VizOptions) => {
      const port = Number(opts.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw inputError(`--port ${opts.port} is not a port number`, { hint: 'e.g. --port 8080' });
      if (opts.app !== undefined && !SAFE_NAME.test(opts.app)) throw inputError(`--app ${JSON.stringify(opts.app)} is not an app name`, { hint: 'app names are letters, digits, _ . -' });
      const cluster = await loadClusterConfig();
      const ep = stackEndpoints(cluster);
      const redisUrl = opts.redis ?? ep?.redisUrl;
      if (!redisUrl) {
        throw runtimeError('no Redis to read the deployment from', {
          hint: 'deploy an app first (`jupiter deploy <app>` starts the embedded stack), or pass --redis / set JUPITER_REDIS_URL',
        });
      }
      // Loaded on use: the server pulls in the MQTT, Redis and Prometheus clients.
      const { DashboardServer } = await import('../../dashboard/server.js');
      const server = new DashboardServer({ ...vizBroker(cluster, ep), redisUrl, prefix: cluster.redisPrefix, host: opts.host, port, app: opts.app });
      await server.start();
      const broker = server.embeddedBroker;
      process.stderr.write(`viz: Redis ${maskUrl(redisUrl)}; MQTT ${broker ? `embedded ${broker.tcpUrl}` : maskUrl(ep?.mqttUrl ?? cluster.mqtt.url)}\n`);
      process.stdout.write(`Dashboard: ${server.url}\nMetrics:   ${new URL('/metrics', server.url).href}\n(Ctrl-C to stop)\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.stop();
    }));
}

/**
 * Which broker to publish to and which one this server subscribes to for the page (the page
 * itself only ever talks to this server, so no broker credential reaches a browser).
 */
function vizBroker(
  cluster: Awaited<ReturnType<typeof loadClusterConfig>>,
  ep: ReturnType<typeof stackEndpoints>,
): Pick<DashboardOptions, 'mqtt' | 'live'> {
  const external = publisherOptionsFromCluster(cluster);
  if (ep?.dashboardUrl && ep.mqttUrl) {
    // The hub already bridges Redis to its broker: only show what it publishes (no double events).
    // The embedded broker wants the stack's login (stack.json); a configured one its own settings.
    const login = ep.mqttPassword ? { username: ep.mqttUsername, password: ep.mqttPassword } : {};
    return { mqtt: null, live: { ...external, url: ep.mqttUrl, ...login } };
  }
  if (external) return { mqtt: external };
  return {}; // no broker anywhere: an embedded aedes in this process
}
