// `jupiter profile [--json] [--wait s]`: what the live agents measured.
// `jupiter profile exec <app>`: ask every live agent to profile the app's tasks.
import type { Command } from 'commander';
import { inputError } from '../../../config/errors.js';
import { action } from '../run.js';
import type { ProfileView } from '../../profiles/read.js';
import { loadApp } from '../../../config/app/load.js';
import { runtimeError } from '../../../config/errors.js';

interface ProfileFlags {
  json?: boolean;
  redis?: string;
  prefix?: string;
  wait?: string;
}

/** What a complete profile of the configured nodes still lacks: nodes with no live agent, unfitted links. */
function profileGaps(view: ProfileView, nodes: string[]): string[] {
  const live = new Set(view.snapshot.nodes.map((n) => n.node));
  const fitted = new Set(view.snapshot.links.map((l) => `${l.from} -> ${l.to}`));
  const dead = nodes.filter((n) => !live.has(n));
  const links = nodes.flatMap((f) => nodes.filter((t) => t !== f).map((t) => `${f} -> ${t}`)).filter((k) => !fitted.has(k));
  const out: string[] = [];
  if (dead.length) out.push(`no live agent on ${dead.join(', ')}`);
  if (links.length) out.push(`${links.length} of ${nodes.length * (nodes.length - 1)} link(s) not fitted (${links.slice(0, 6).join(', ')}${links.length > 6 ? ', …' : ''})`);
  return out;
}

export function register(program: Command): void {
  const cmd = program
    .command('profile')
    .description('show live nodes, the fitted link matrix and execution profiles (from the node agents)')
    .option('--json', 'print the profiles as JSON')
    .option('--redis <url>', 'Redis URL (default: configuration / JUPITER_REDIS_URL / embedded stack)')
    .option('--prefix <prefix>', 'Redis key prefix (default: the configuration\'s)')
    .option('--wait <seconds>', 'wait up to this long for a complete profile (every configured node live, every link between them fitted); exit 1 if it is not')
    .action(action(async (flags: ProfileFlags) => {
      const waitMs = flags.wait === undefined ? 0 : Number(flags.wait) * 1000;
      if (!Number.isFinite(waitMs) || waitMs < 0) throw inputError(`--wait must be a number of seconds, got ${JSON.stringify(flags.wait)}`, { hint: 'for example --wait 10' });
      // Loaded on use: these need the Redis client.
      const [{ connectToStack }, { isComplete, readProfileView }, { formatProfileView }] = await Promise.all([
        import('../../connect.js'), import('../../profiles/read.js'), import('../../profiles/format.js'),
      ]);
      const target = await connectToStack(flags.redis);
      const redis = target.redis;
      try {
        const prefix = flags.prefix ?? target.prefix;
        // Complete means every node of the configuration has a live agent and every link between
        // them a fit: not just the agents that happen to have registered so far.
        const configured = target.cluster.nodes.map((n) => n.name);
        const deadline = Date.now() + waitMs;
        let view: ProfileView = await readProfileView(redis, { prefix });
        while (Date.now() < deadline && !isComplete(view.snapshot, configured)) {
          await new Promise((r) => setTimeout(r, 250));
          view = await readProfileView(redis, { prefix });
        }
        if (flags.json) process.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
        else process.stdout.write(formatProfileView(view));
        if (flags.wait !== undefined) {
          const gaps = profileGaps(view, configured);
          if (gaps.length) {
            throw runtimeError(`the profile is not complete after ${flags.wait} s: ${gaps.join('; ')}`, {
              hint: 'start an agent on each node (`jupiter agent --node <name>`) or wait longer; the nodes come from the cluster configuration',
            });
          }
          if (!flags.json) process.stdout.write(`profile complete: ${configured.length} node(s), ${configured.length * (configured.length - 1)} link(s) fitted\n`);
        }
      } finally {
        redis.disconnect();
      }
    }));
  cmd
    .command('exec <app>')
    .description('Ask every live agent to run each task of the app on its sample input and record time and output volume')
    .option('--json', 'print the replies as JSON')
    .option('--redis <url>', 'Redis URL (default: configuration / JUPITER_REDIS_URL / embedded stack)')
    .option('--prefix <prefix>', 'Redis key prefix (default: the configuration\'s)')
    .option('--timeout <seconds>', 'give up on an agent that finished no task and sent no answer for this long', '300')
    .option('--serial', 'profile one node at a time (default: as many of a machine\'s nodes at once as it has cores, machines in parallel)')
    .option('--fresh', 'run every task again (by default a task unchanged since its last profile on a node keeps it)')
    .exitOverride()
    .action(action(async (appArg: string, _local: unknown, command: Command) => {
      // --redis/--prefix/--json may come before or after `exec` (the parent command has them too).
      const flags = command.optsWithGlobals<ProfileFlags & { timeout: string; serial?: boolean; fresh?: boolean }>();
      const timeoutMs = Number(flags.timeout) * 1000;
      if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw inputError(`--timeout must be a positive number of seconds, got ${JSON.stringify(flags.timeout)}`, { hint: 'for example --timeout 120' });
      const app = await loadApp(appArg);
      // Loaded on use: these need the Redis client.
      const [{ connectToStack }, { formatExecResult, requestExecProfiles }, { createProgress }] = await Promise.all([
        import('../../connect.js'), import('../../profiles/exec.js'), import('../../progress.js'),
      ]);
      const target = await connectToStack(flags.redis);
      const redis = target.redis;
      try {
        const progress = createProgress({ quiet: Boolean(flags.json) });
        const step = progress.step(`Execution profiling of ${app.name}`);
        let done = 0;
        const res = await requestExecProfiles(redis, app, {
          prefix: flags.prefix ?? target.prefix,
          timeoutMs,
          serial: flags.serial,
          fresh: flags.fresh,
          onReply: (r) => step.update(`${++done} node(s) answered (last: ${r.node})`),
          onProgress: (node, n, total) => step.update(`${done} node(s) answered; ${node}: ${n}/${total} tasks`),
        });
        if (res.asked.length === 0) {
          step.fail('no live agents');
          throw runtimeError('no live agents to profile on', { hint: 'start agents with `jupiter agent --node <name>` (or `jupiter deploy`, which starts the local ones)' });
        }
        const ok = res.missing.length === 0 && res.replies.every((r) => r.ok);
        if (ok) step.done(`${res.replies.length} node(s)`);
        else step.fail(`${res.replies.filter((r) => r.ok).length}/${res.asked.length} node(s) complete`);
        process.stdout.write(flags.json ? `${JSON.stringify(res, null, 2)}\n` : formatExecResult(app, res));
        if (!ok) throw runtimeError('execution profiling did not complete on every node', { hint: 'see the notes under the table (and the agents\' logs)' });
      } finally {
        redis.disconnect();
      }
    }));
}
