// `jupiter validate <app>`: load and check an app folder (and that it fits the cluster
// configuration), then print a short summary table. Exit 0 when valid, 2 with file:line otherwise.
import type { Command } from 'commander';
import { table as newTable } from '../../report/table.js';
import { relative } from 'node:path';
import { loadApp } from '../../../config/app/load.js';
import { validateAppAgainstCluster } from '../../../config/app/cluster-check.js';
import { displayPath } from '../../../config/app/text.js';
import { loadClusterConfig } from '../../../config/cluster/load.js';
import { HOME, type AppSpec } from '../../../config/types.js';
import { action } from '../run.js';

export function summaryTable(app: AppSpec): string {
  const table = newTable(['task', 'inputs', 'flag', 'children', 'script', 'language']);
  for (const t of app.tasks) {
    const role = t.isDag ? [] : ['(helper: runs once)'];
    table.push([
      t.name + (app.staticPlacement[t.name] ? ` @${app.staticPlacement[t.name]}` : ''),
      t.isDag ? String(t.numInputs) + (t.numInputs > 1 ? ' (join)' : '') : '-',
      t.isDag ? (t.broadcast ? 'true (all)' : 'false (i-th)') : '-',
      t.isDag ? t.children.map((c) => (c === HOME ? 'home (sink)' : c)).join(' ') : role.join(''),
      relative(app.dir, t.scriptFile),
      t.language,
    ]);
  }
  return table.toString();
}

export function register(program: Command): void {
  program
    .command('validate')
    .description('check an app folder (configuration.txt, scripts, config files, sample inputs) and print its tasks')
    .argument('<app>', 'app folder, or the name of an app under apps/')
    .action(action(async (appArg: string) => {
      const app = await loadApp(appArg);
      const cluster = await loadClusterConfig();
      for (const w of validateAppAgainstCluster(app, cluster)) process.stderr.write(`${w}\n`);
      const helpers = app.tasks.length - app.dagTasks.length;
      const out = [
        `app ${app.name} (${displayPath(app.dir)}): ${app.dagTasks.length} DAG task(s)${helpers ? ` + ${helpers} helper(s)` : ''}, ` +
          `entry ${app.entryTasks.join(', ')}, sink ${app.sinkTasks.join(', ')}, ${app.sampleInputs.length} sample input(s)${app.sampleInputs.length ? '' : ' (deploy waits for `jupiter submit`)'}`,
        summaryTable(app),
        `cluster (${cluster.source}): home + ${cluster.nodes.length} node(s) ${cluster.nodes.map((n) => n.name).join(', ')}, ${cluster.runtime} runtime`,
        `ok: ${app.name} is valid`,
      ];
      process.stdout.write(out.join('\n') + '\n');
    }));
}
