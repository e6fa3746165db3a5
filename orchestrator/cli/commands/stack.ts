// `jupiter stack up|down|status`: the embedded default's private services.
// (`jupiter stack hub` is the hub process itself, started detached by `up`/`deploy`.)
import type { Command } from 'commander';
import { renderTable } from '../../report/table.js';
import { loadClusterConfig } from '../../../config/cluster/load.js';
import { maskUrl } from '../../../config/cluster/mask.js';
import { action } from '../run.js';
import { inputError, runtimeError } from '../../../config/errors.js';
import { isAlive, readStackState, stateDir } from '../../stack/state.js';

/** Which state folder a command uses, and why (a configuration elsewhere has its own). */
function stateFolderLine(cluster: { stateDir: string; stateDirOrigin?: string }): string {
  return `state folder: ${cluster.stateDir}${cluster.stateDirOrigin ? ` (${cluster.stateDirOrigin})` : ''}`;
}

export function register(program: Command): void {
  const stack = program.command('stack').description('start, stop or show the private services of the embedded default, and the node agents on their engines');

  stack
    .command('up')
    .description('start the private Redis, the hub (MQTT broker, telemetry, dashboard) and the node agents')
    .option('--agent-wait <seconds>', 'wait this long for the heartbeats of agents on named engines (0 = do not wait)', '30')
    .action(action(async (flags: { agentWait: string }) => {
      const waitSec = Number(flags.agentWait);
      if (!Number.isFinite(waitSec) || waitSec < 0) throw inputError(`--agent-wait must be a number of seconds, got ${JSON.stringify(flags.agentWait)}`, { hint: 'for example --agent-wait 30' });
      const [cluster, { ensureStack }, { createProgress }] = await Promise.all([
        loadClusterConfig(), import('../../stack/embedded.js'), import('../../progress.js'),
      ]);
      const ep = await ensureStack(cluster, createProgress());
      const login = ep.mqttPassword ? `  (user ${ep.mqttUsername}, password in ${stateDir(cluster.stateDir)}/stack.json)` : '';
      process.stdout.write(`${stateFolderLine(cluster)}\nredis      ${maskUrl(ep.redisUrl)}\nmqtt       ${ep.mqttUrl ?? '-'}${login}\nmqtt (ws)  ${ep.mqttWsUrl ?? '-'}\ndashboard  ${ep.dashboardUrl ?? '-'}\n`);
      for (const a of ep.agents) process.stdout.write(`agent      ${a.node}: container ${a.container} on ${a.engine} (${a.action}), listens on ${a.listen}\n`);
      if (ep.agents.length > 0 && waitSec > 0) {
        const { waitForAgentHeartbeats } = await import('../../stack/node-agents.js');
        const w = await waitForAgentHeartbeats(cluster, ep.redisUrl, { timeoutMs: waitSec * 1000, started: ep.agents });
        process.stdout.write(`heartbeats ${w.live.length}/${ep.agents.length} agents live in Redis\n`);
        if (w.missing.length > 0) {
          const why = w.missing.map((m) => `  ${m.node} on ${m.engine} (${m.state})${m.logTail ? `:\n${m.logTail.split('\n').map((l) => `    ${l}`).join('\n')}` : ''}`).join('\n');
          throw runtimeError(`no heartbeat after ${waitSec} s from the agent of ${w.missing.map((m) => m.node).join(', ')}\n${why}`, {
            hint: 'the agent must reach Redis from its node at the configured redis.url (and the other agents at its address); `jupiter stack status` shows them',
          });
        }
      }
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
      process.stdout.write(`${renderTable(['service', 'pid', 'state', 'address'], rows)}\n${stateFolderLine(cluster)}\n`);
      const { nodeAgentStatus } = await import('../../stack/node-agents.js');
      const agents = await nodeAgentStatus(cluster, cluster.redisUrl ?? (state.redis && isAlive(state.redis.pid) ? state.redis.url : undefined));
      if (agents.length > 0) {
        const heart = (h: boolean | undefined): string => (h === undefined ? 'unknown' : h ? 'live' : 'none');
        process.stdout.write(`\nNode agents on their Docker engines\n${renderTable(['node', 'engine', 'container', 'state', 'restarts', 'heartbeat', 'address'],
          agents.map((a) => [a.node, a.engine, a.container ?? '-', a.error ? `${a.state}: ${a.error}` : a.state, a.restarts ?? '-', heart(a.heartbeat), a.address ?? '-']))}\n`);
      }
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
