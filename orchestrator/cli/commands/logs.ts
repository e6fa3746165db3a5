// `jupiter logs <app> <task>`: recent output of one task's runner (process log or container logs).
import type { Command } from 'commander';
import { action } from '../run.js';
import { runtimeError } from '../../../config/errors.js';
import { HOME } from '../../../config/types.js';

export function register(program: Command): void {
  program
    .command('logs <app> <task>')
    .description('print the recent log lines of a task\'s runner (`home` for the sink)')
    .option('-n, --tail <lines>', 'number of lines', '200')
    .action(action(async (appArg: string, task: string, opts: { tail: string }) => {
      const appName = await (await import('../../../config/app/app-name.js')).appNameOf(appArg);
      const [{ connectToStack }, { readDeployment }, { homeRuntime, runtimeFor }] = await Promise.all([
        import('../../connect.js'), import('../../deploy/record.js'), import('../../deploy/runtimes.js'),
      ]);
      const { cluster, redis } = await connectToStack();
      try {
        const dep = await readDeployment(redis, cluster.redisPrefix, appName);
        if (!dep) throw runtimeError(`${appName} is not deployed`, { hint: `jupiter deploy ${appName}` });
        const runtime = task === HOME ? homeRuntime() : runtimeFor(dep.runtime);
        process.stdout.write(await runtime.logs(appName, task, cluster, Number(opts.tail)));
      } finally {
        redis.disconnect();
      }
    }));
}
