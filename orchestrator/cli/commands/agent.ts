// `jupiter agent --node <name>`: the long-running node agent (profilers/agent/agent.ts).
import type { Command } from 'commander';
import { inputError } from '../../../config/errors.js';
import { SAFE_NAME } from '../../../config/types.js';
import { maskUrl } from '../../../config/cluster/mask.js';
import { DEFAULT_PROBE_SIZES_KB } from '../../../profilers/network/profiler.js';
import { DEFAULT_PROBE_BUDGET } from '../../../profilers/network/budget.js';
import { action } from '../run.js';

interface AgentFlags {
  node: string;
  listen?: string;
  advertise?: string;
  redis?: string;
  prefix?: string;
  heartbeat: string;
  probeSizes: string;
  bootstrapRounds: string;
  refresh: string;
  probeBudget?: string;
  lossInterval: string;
  lossCount: string;
  probeTimeout: string;
  resourceInterval: string;
  cpus?: string;
  overheadInterval: string;
}

function positive(name: string, v: string, integer = false): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw inputError(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got ${JSON.stringify(v)}`, {
      hint: `for example --${name} ${integer ? '3' : '2.5'}`,
    });
  }
  return n;
}

function probeBudget(flag: string | undefined, configured: number | undefined): number {
  if (flag === undefined) return configured ?? DEFAULT_PROBE_BUDGET;
  const n = positive('probe-budget', flag);
  if (n > 1) throw inputError(`--probe-budget is a share of the link's capacity (0 < x <= 1), got ${flag}`, { hint: 'for example --probe-budget 0.02 (2%)' });
  return n;
}

export function parseListen(v: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !m[1] || port > 65535) {
    throw inputError(`--listen must be host:port, got ${JSON.stringify(v)}`, { hint: 'for example --listen 127.0.0.1:7070 (port 0 = any free port)' });
  }
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
}

export function parseSizes(v: string): number[] {
  const sizes = v.split(',').map((s) => s.trim()).filter(Boolean).map((s) => Number(s));
  if (sizes.length === 0 || sizes.some((s) => !Number.isFinite(s) || s <= 0 || s > 65536)) {
    throw inputError(`--probe-sizes must be a comma-separated list of sizes in KB (each 1..65536), got ${JSON.stringify(v)}`, {
      hint: `the default is ${DEFAULT_PROBE_SIZES_KB.join(',')}`,
    });
  }
  return [...new Set(sizes.map((k) => Math.round(k * 1024)))];
}

export function register(program: Command): void {
  program
    .command('agent')
    .description('run the node agent: heartbeat, probe endpoint, network/resource/execution profilers, WAVE')
    .requiredOption('--node <name>', 'this node\'s name (as in nodes.txt)')
    .option('--listen <host:port>', 'probe endpoint address (default: the node\'s agent address in the configuration, else 127.0.0.1:<free port>)')
    .option('--advertise <host>', 'address peers should use (default: the listen host)')
    .option('--redis <url>', 'Redis URL (default: configuration / JUPITER_REDIS_URL / embedded stack)')
    .option('--prefix <prefix>', 'Redis key prefix (default: the configuration\'s)')
    .option('--heartbeat <seconds>', 'heartbeat period; the node counts as gone after 3 missed periods', '3')
    .option('--probe-sizes <kb,...>', 'network probe sizes in KB', DEFAULT_PROBE_SIZES_KB.join(','))
    .option('--bootstrap-rounds <n>', 'times the start-up burst sends every size to every peer', '3')
    .option('--refresh <seconds>', 'period of the steady-state probe round', '60')
    .option('--probe-budget <fraction>', `share of each link's measured capacity its steady probes may use (default: the configuration's profiling.probeBudget, else ${DEFAULT_PROBE_BUDGET})`)
    .option('--loss-interval <seconds>', 'period of the echo-probe loss rounds (failure localisation); 0 = off', '10')
    .option('--loss-count <n>', 'echo packets per peer per loss round', '100')
    .option('--probe-timeout <seconds>', 'a probe that takes longer fails (a cut link is seen after this long)', '60')
    .option('--resource-interval <seconds>', 'period of the resource profiler', '2')
    .option('--cpus <n>', 'CPUs this node may use (cores, may be fractional) when its processes cannot see the quota (default: the configuration\'s nodes[].cpus, else what the agent reads from its cgroup)')
    .option('--overhead-interval <seconds>', 'period of the hop/invocation overhead and home-link probes (the mapper\'s control costs); 0 = off', '60')
    .action(action(async (flags: AgentFlags) => {
      if (!SAFE_NAME.test(flags.node)) {
        throw inputError(`--node ${JSON.stringify(flags.node)} is not a valid node name`, { hint: 'use letters, digits, _ . - (starting with a letter or digit)' });
      }
      const heartbeatMs = positive('heartbeat', flags.heartbeat) * 1000;
      const sizes = parseSizes(flags.probeSizes);
      const bootstrapRounds = positive('bootstrap-rounds', flags.bootstrapRounds, true);
      const refreshMs = positive('refresh', flags.refresh) * 1000;
      const resourceMs = positive('resource-interval', flags.resourceInterval) * 1000;
      const lossMs = flags.lossInterval === '0' ? 0 : positive('loss-interval', flags.lossInterval) * 1000;
      const lossCount = positive('loss-count', flags.lossCount, true);
      const timeoutMs = positive('probe-timeout', flags.probeTimeout) * 1000;
      const overheadMs = flags.overheadInterval === '0' ? 0 : positive('overhead-interval', flags.overheadInterval) * 1000;
      const [{ Agent }, { defaultHandlers }, { resolveRedis }] = await Promise.all([
        import('../../../profilers/agent/agent.js'), import('../../../profilers/agent/handlers.js'), import('../../connect.js'),
      ]);
      const target = await resolveRedis(flags.redis);
      const configured = target.cluster.nodes.find((n) => n.name === flags.node)?.agent ?? (target.cluster.home.name === flags.node ? target.cluster.home.agent : undefined);
      const listen = flags.listen ? parseListen(flags.listen) : (configured ?? { host: '127.0.0.1', port: 0 });
      const cpus = flags.cpus !== undefined ? positive('cpus', flags.cpus) : target.cluster.nodes.find((n) => n.name === flags.node)?.cpus;
      const agent = new Agent({
        node: flags.node,
        redisUrl: target.url,
        prefix: flags.prefix ?? target.prefix,
        listenHost: listen.host,
        listenPort: listen.port,
        advertiseHost: flags.advertise,
        heartbeatMs,
        network: { sizes, bootstrapRounds, refreshMs, timeoutMs, budget: probeBudget(flags.probeBudget, target.cluster.profiling?.probeBudget) },
        loss: lossMs > 0 ? { intervalMs: lossMs, count: lossCount } : false,
        resource: { intervalMs: resourceMs, ...(cpus !== undefined ? { cpus } : {}) },
        overhead: overheadMs > 0 ? { everyMs: overheadMs } : false,
        handlers: defaultHandlers(),
      });
      await agent.start();
      process.stderr.write(`[agent ${flags.node}] Redis ${maskUrl(target.url)}, prefix ${flags.prefix ?? target.prefix}\n`);
      await new Promise<void>((resolve) => {
        const stop = (sig: string) => {
          process.stderr.write(`[agent ${flags.node}] ${sig}: stopping\n`);
          agent.stop().then(resolve, resolve);
        };
        process.once('SIGTERM', () => stop('SIGTERM'));
        process.once('SIGINT', () => stop('SIGINT'));
      });
      process.exit(0);
    }));
}
