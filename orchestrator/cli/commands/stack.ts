// `jupiter stack up|down|status`: the embedded default's private services.
// (`jupiter stack hub` is the hub process itself, started detached by `up`/`deploy`.)
import type { Command } from 'commander';
import { renderTable } from '../../report/table.js';
import { loadClusterConfig } from '../../../config/cluster/load.js';
import { maskUrl } from '../../../config/cluster/mask.js';
import { action } from '../run.js';
import { inputError } from '../../../config/errors.js';
import { isAlive, readStackState, stateDir } from '../../stack/state.js';

export function register(program: Command): void {
  const stack = program.command('stack').description('start, stop or show the private services of the embedded default');

  stack
    .command('up')
    .description('start the private Redis, the hub (MQTT broker, telemetry, dashboard) and local agents')
    .action(action(async () => {
      const [cluster, { ensureStack }, { createProgress }] = await Promise.all([
        loadClusterConfig(), import('../../stack/embedded.js'), import('../../progress.js'),
      ]);
      const ep = await ensureStack(cluster, createProgress());
      const login = ep.mqttPassword ? `  (user ${ep.mqttUsername}, password in ${stateDir(cluster.stateDir)}/stack.json)` : '';
      process.stdout.write(`redis      ${maskUrl(ep.redisUrl)}\nmqtt       ${ep.mqttUrl ?? '-'}${login}\nmqtt (ws)  ${ep.mqttWsUrl ?? '-'}\ndashboard  ${ep.dashboardUrl ?? '-'}\n`);
    }));

  stack
    .command('down')
    .description('stop every private service of the embedded default')
    .action(action(async () => {
      const [cluster, { stopStack }] = await Promise.all([loadClusterConfig(), import('../../stack/embedded.js')]);
      const stopped = await stopStack(cluster);
      process.stdout.write(stopped.length ? `${stopped.join('\n')}\n` : 'nothing was running\n');
    }));

  stack
    .command('status')
    .description('show which private services run and where')
    .action(action(async () => {
      const cluster = await loadClusterConfig();
      const state = readStackState(stateDir(cluster.stateDir));
      const rows: Array<Array<string | number>> = [];
      const row = (name: string, pid: number | undefined, addr: string) =>
        rows.push([name, pid ?? '-', isAlive(pid) ? 'running' : 'stopped', addr]);
      row('redis', state.redis?.pid, state.redis ? maskUrl(state.redis.url) : '-');
      row('hub', state.hub?.pid, state.hub ? `${state.hub.httpUrl}  mqtt ${state.hub.mqttUrl}` : '-');
      for (const [node, a] of Object.entries(state.agents ?? {})) row(`agent ${node}`, a.pid, a.listen);
      if (state.dockerd) row('dockerd', state.dockerd.pid, `unix://${state.dockerd.socket}`);
      process.stdout.write(`${renderTable(['service', 'pid', 'state', 'address'], rows)}\n`);
    }));

  stack
    .command('hub')
    .description('(internal) run the hub in the foreground: MQTT broker, telemetry bridge, dashboard')
    .option('--redis <url>', 'Redis URL (default: JUPITER_HUB_REDIS_URL, which keeps a password out of the process list)')
    .option('--http-port <port>', 'dashboard and /metrics port', '8080')
    .option('--mqtt-port <port>', 'embedded broker TCP port (omit to use the configured broker)')
    .option('--ws-port <port>', 'embedded broker WebSocket port')
    .action(action(async (opts: { redis?: string; httpPort: string; mqttPort?: string; wsPort?: string }) => {
      const redisUrl = opts.redis ?? process.env.JUPITER_HUB_REDIS_URL;
      if (!redisUrl) throw inputError('the hub needs a Redis URL', { hint: 'set JUPITER_HUB_REDIS_URL (or pass --redis)' });
      const [cluster, { runHub }, { usePrivateEngine }] = await Promise.all([
        loadClusterConfig(), import('../../stack/hub.js'), import('../../stack/dockerd.js'),
      ]);
      // The broker's login, then out of the environment the runners the reconciler starts inherit.
      const password = process.env.JUPITER_HUB_MQTT_PASSWORD;
      const mqttLogin = password ? { username: process.env.JUPITER_HUB_MQTT_USERNAME ?? 'jupiter', password } : undefined;
      delete process.env.JUPITER_HUB_MQTT_PASSWORD;
      // The reconciler restarts containers on the stack's private engine, when it runs one.
      usePrivateEngine(cluster, readStackState(stateDir(cluster.stateDir)));
      await runHub({
        cluster,
        redisUrl,
        httpPort: Number(opts.httpPort),
        mqttPort: opts.mqttPort ? Number(opts.mqttPort) : undefined,
        wsPort: opts.wsPort ? Number(opts.wsPort) : undefined,
        mqttLogin,
      });
    }));
}
