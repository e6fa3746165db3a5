// `jupiter status [<app>]`: placement, queue depths, processed/failed counts, makespan p50/p95.
import type { Command } from 'commander';
import { action } from '../run.js';
import { inputError } from '../../../config/errors.js';

export function register(program: Command): void {
  program
    .command('status [app]')
    .description('show deployed apps: placement, queues, counts, makespans, dead letters')
    .option('--json', 'print JSON')
    .option('--csv', 'print the per-item runtime records of one app as CSV (runtime_tasks.txt columns plus Node)')
    .action(action(async (appArg: string | undefined, opts: { json?: boolean; csv?: boolean }) => {
      const appName = appArg === undefined ? undefined : await (await import('../../../config/app/app-name.js')).appNameOf(appArg);
      if (opts.csv && !appName) throw inputError('--csv needs an app name', { hint: 'jupiter status <app> --csv > runtime_tasks.csv' });
      const [{ connectToStack }, { loadApp }, { getStatus }, { deployedApps, readDeployment, readMapping }, { statusTable }] = await Promise.all([
        import('../../connect.js'), import('../../../config/app/load.js'), import('../../../circe/queue/status.js'),
        import('../../deploy/record.js'), import('../../report/tables.js'),
      ]);
      const { cluster, redis, dashboardUrl } = await connectToStack();
      try {
        const prefix = cluster.redisPrefix;
        if (opts.csv) {
          const { exportRuntimeCsv } = await import('../../../circe/queue/records.js');
          if (!(await readDeployment(redis, prefix, appName!))) throw inputError(`${appName} is not deployed`, { hint: 'jupiter status lists the deployed apps' });
          process.stdout.write(await exportRuntimeCsv(redis, appName!, prefix));
          return;
        }
        const names = appName ? [appName] : await deployedApps(redis, prefix);
        // Apps read at once (their Redis calls share the connection's pipeline), printed in order:
        // with 10 apps deployed, one after another would cost 10 sets of round trips.
        const all = await Promise.all(names.map(async (name) => {
          const dep = await readDeployment(redis, prefix, name);
          if (!dep) throw inputError(`${name} is not deployed`, { hint: 'jupiter status lists the deployed apps' });
          const app = await loadApp(dep.appDir);
          const [st, rec] = await Promise.all([getStatus(redis, prefix, app), readMapping(redis, prefix, name)]);
          return { name, dep, st, rec };
        }));
        const out: unknown[] = [];
        for (const { name, dep, st, rec } of all) {
          if (opts.json) out.push({ deployment: dep, mapping: rec, status: st });
          else process.stdout.write(`${name}  (run ${dep.runId}, ${dep.runtime} runtime, mapper ${dep.mapper})\n${statusTable(st, rec)}\noutputs: ${dep.outputDir}\n\n`);
        }
        if (opts.json) process.stdout.write(`${JSON.stringify(appName ? out[0] : out, null, 2)}\n`);
        else if (names.length === 0) process.stdout.write('no app is deployed\n');
        else if (dashboardUrl) process.stdout.write(`dashboard: ${dashboardUrl}\n`);
      } finally {
        redis.disconnect();
      }
    }));
}
