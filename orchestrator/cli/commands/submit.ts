// `jupiter submit <app> <file...>`: stream more items into a running deployment.
import { basename } from 'node:path';
import type { Command } from 'commander';
import { action } from '../run.js';
import { runtimeError } from '../../../config/errors.js';

export function register(program: Command): void {
  program
    .command('submit <app> <files...>')
    .description('submit files as new stream items to a deployed app')
    .option('-w, --wait', 'wait for their outputs')
    .option('--timeout <sec>', 'with --wait: give up after this many seconds', '300')
    .action(action(async (appArg: string, files: string[], opts: { wait?: boolean; timeout: string }) => {
      const appName = await (await import('../../../config/app/app-name.js')).appNameOf(appArg);
      const [{ connectToStack }, { createProgress, withStep }, { loadApp }, { submitItems }, { waitForItems }, { readDeployment }, { itemsTable }, { waitStep }] = await Promise.all([
        import('../../connect.js'), import('../../progress.js'), import('../../../config/app/load.js'), import('../../../circe/home/source.js'),
        import('../../../circe/home/wait.js'), import('../../deploy/record.js'), import('../../report/tables.js'), import('../../deploy/wait-step.js'),
      ]);
      const { cluster, redis } = await connectToStack();
      const progress = createProgress();
      try {
        const dep = await readDeployment(redis, cluster.redisPrefix, appName);
        if (!dep) throw runtimeError(`${appName} is not deployed`, { hint: `jupiter deploy ${appName}` });
        const app = await loadApp(dep.appDir);
        const items = await withStep(progress, `Submitting ${files.length} file(s) (one item per job prefix)`, (step) =>
          submitItems(redis, cluster.redisPrefix, app, files, { runId: dep.runId, onProgress: (d, t) => step.update(`${d}/${t}`) }));
        for (const i of items) process.stdout.write(`${i.item}\t${i.files.map((f) => basename(f)).join(' ')}\n`);
        if (opts.wait) {
          const results = await waitStep(progress, 'Waiting for outputs', items.length, (onProgress) =>
            waitForItems(redis, cluster.redisPrefix, appName, items.map((i) => i.item), { timeoutMs: Number(opts.timeout) * 1000, onProgress }));
          process.stdout.write(`${itemsTable(results, app.name)}\noutputs: ${dep.outputDir}\n`);
        }
      } finally {
        redis.disconnect();
      }
    }));
}
