// `jupiter remap <app> [--dry-run] [--mapper name] [--move task=node ...] [--json]`: compute the
// better mapping of a deployed app from the current models (live link fits, online execution
// models from the runtime records of its items), print before/after and the predicted gain, and
// move the tasks live (orchestrator/adapt/move.ts; a `remap` event, published on
// jupiter/<app>/remap by the telemetry bridge). --move asks for given moves instead of the
// mapper's; --dry-run only prints.
import type { Command } from 'commander';
import { inputError, runtimeError } from '../../../config/errors.js';
import { table as newTable } from '../../report/table.js';
import type { RemapPlan } from '../../adapt/plan.js';
import { action } from '../run.js';

interface RemapFlags {
  dryRun?: boolean;
  move?: string[];
  mapper?: string;
  json?: boolean;
  redis?: string;
}

const sec = (s: number) => (Number.isFinite(s) ? `${(s * 1000).toFixed(1)} ms` : 'cannot run');

export function formatPlan(plan: RemapPlan): string {
  const t = newTable(['task', 'now on', 'proposed', '']);
  for (const task of Object.keys(plan.after.mapping)) {
    const from = plan.before.mapping[task] ?? '-';
    const to = plan.after.mapping[task]!;
    t.push([task, from, to, from === to ? '' : 'moves']);
  }
  const out = [
    `Re-mapping of ${plan.app} (mapper ${plan.mapper}), both evaluated on the current models`,
    t.toString(),
    `predicted makespan: ${sec(plan.before.makespan)} now -> ${sec(plan.after.makespan)} proposed (gain ${(plan.gain * 100).toFixed(1)}%)`,
    `reason: ${plan.reason}`,
  ];
  if (plan.models.length > 0) {
    const m = newTable(['task', 'node', 'items', 'time at mean input', 'error']);
    for (const x of [...plan.models].sort((a, b) => a.task.localeCompare(b.task) || a.node.localeCompare(b.node))) {
      m.push([x.task, x.node, x.n, sec(x.baseSec + x.perByteSec * x.meanInBytes), `${(x.relError * 100).toFixed(1)}%`]);
    }
    out.push('', 'Online execution models (recent window of live items)', m.toString());
  } else out.push('', 'Online execution models: no runtime records yet (the one-shot execution profile is used)');
  return `${out.join('\n')}\n`;
}

/** `task=node` arguments of --move, checked against the app and the live nodes. */
export function parseMoves(args: string[], tasks: string[], nodes: string[], pinned: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of args) {
    const m = /^([^=\s]+)=([^=\s]+)$/.exec(a);
    if (!m) throw inputError(`--move ${a}: expected task=node`, { hint: 'e.g. --move detect=node2 track=node3' });
    const [, task, node] = m as unknown as [string, string, string];
    if (!tasks.includes(task)) throw inputError(`--move ${a}: the app has no task "${task}"`, { hint: `its tasks: ${tasks.join(', ')}` });
    if (!nodes.includes(node)) throw inputError(`--move ${a}: "${node}" is not a live node`, { hint: `live nodes: ${nodes.join(', ') || 'none (start the node agents)'}` });
    if (pinned[task] !== undefined && pinned[task] !== node) throw inputError(`--move ${a}: ${task} is pinned to ${pinned[task]} by the app's placement lines`, { hint: 'change the app\'s static placement to move it' });
    out[task] = node;
  }
  return out;
}

export function register(program: Command): void {
  program
    .command('remap')
    .description('compute a better mapping of a deployed app from the current models; print before/after and the predicted gain')
    .argument('<app>', 'app folder or name under apps/ (deployed)')
    .option('--dry-run', 'only print the plan; move nothing, record no event')
    .option('--move <task=node...>', 'move these tasks (instead of what the mapper proposes)')
    .option('-m, --mapper <name>', 'mapper (default: the one the app was deployed with)')
    .option('--redis <url>', 'Redis URL (default: configuration / JUPITER_REDIS_URL / embedded stack)')
    .option('--json', 'print the plan as JSON')
    .action(action(async (appArg: string, flags: RemapFlags) => {
      const [{ loadApp }, { connectToStack }, { readProfiles }, { readExecRecords }, { planRemap, remapMapper }, { mappers }, { redisKeys }, { readDeployment, readMapping }] = await Promise.all([
        import('../../../config/app/load.js'), import('../../connect.js'), import('../../profiles/read.js'), import('../../adapt/records.js'),
        import('../../adapt/plan.js'), import('../../../mappers/index.js'), import('../../../config/redis-keys.js'),
        import('../../deploy/record.js'),
      ]);
      if (flags.mapper !== undefined && !mappers[flags.mapper]) throw inputError(`unknown mapper "${flags.mapper}"`, { hint: `one of: ${Object.keys(mappers).join(', ')}` });
      const app = await loadApp(appArg);
      const { redis, prefix, cluster, url } = await connectToStack(flags.redis);
      try {
        const keys = redisKeys(prefix);
        const [current, dep] = await Promise.all([readMapping(redis, prefix, app.name), readDeployment(redis, prefix, app.name)]);
        if (!current || !dep) throw runtimeError(`${app.name} is not deployed (no mapping in Redis under ${keys.mapping(app.name)})`, { hint: `deploy it first: jupiter deploy ${appArg}` });
        const mapper = flags.mapper ?? remapMapper(current, cluster.mapper);
        const snapshot = await readProfiles(redis, { prefix });
        if (snapshot.nodes.length === 0) throw runtimeError('no live agents: there are no current models to re-map with', { hint: 'start the node agents (`jupiter agent --node <name>`)' });
        const records = await readExecRecords(redis, app.name, { prefix });
        const target = flags.move ? parseMoves(flags.move, app.dagTasks, snapshot.nodes.map((n) => n.node).filter((n) => n !== 'home'), app.staticPlacement) : undefined;
        const plan = planRemap({ app, snapshot, records, current, mapper, target });
        const moving = plan.moves.length > 0;
        if (flags.json && (flags.dryRun || !moving)) process.stdout.write(`${JSON.stringify({ ...plan, problem: undefined }, null, 2)}\n`);
        else if (!flags.json) process.stdout.write(formatPlan(plan));
        if (!moving) {
          if (!flags.json) process.stdout.write(target ? 'Those tasks already run there: nothing to move.\n' : 'The current mapping is already the best one found: nothing to move.\n');
        } else if (flags.dryRun) {
          if (!flags.json) process.stdout.write('--dry-run: nothing recorded, nothing moved.\n');
        } else {
          const { moveTasks } = await import('../../adapt/move.js');
          const res = await moveTasks({ redis, cluster, redisUrl: url }, app, plan, target ? 'manual' : plan.lostNodes.length ? 'lost-node' : 'manual', { dep, current });
          if (flags.json) process.stdout.write(`${JSON.stringify({ ...plan, problem: undefined, moved: res.event.moves, movedMs: res.movedMs }, null, 2)}\n`);
          else process.stdout.write(`Moved ${res.event.moves.map((m) => `${m.task} ${m.from} -> ${m.to}`).join(', ')} live in ${(res.movedMs / 1000).toFixed(1)} s (published on jupiter/${app.name}/remap).\n`);
        }
      } finally {
        redis.disconnect();
      }
    }));
}
