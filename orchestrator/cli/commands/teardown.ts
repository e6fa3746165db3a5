// `jupiter teardown <app>`: remove every container/process, queue and key of the app.
// <app> takes the forms deploy takes (a name under apps/ or a folder path). When an engine of
// the deployment cannot be reached, it says which (exit 1) and `--stack` leaves the stack up:
// stopping Redis under running containers would leave them looping on a refused connection.
import type { Command } from 'commander';
import { action } from '../run.js';
import { runtimeError } from '../../../config/errors.js';

export function register(program: Command): void {
  program
    .command('teardown <app>')
    .description('remove every runner, queue and Redis key of a deployed app (name or folder) and report what was removed')
    .option('--stack', 'also stop the embedded stack (private Redis, hub, local agents)')
    .action(action(async (appArg: string, opts: { stack?: boolean }) => {
      const [{ connectToStack }, { teardownApp }, { stopStack }, { appNameOf }] = await Promise.all([
        import('../../connect.js'), import('../../deploy/teardown.js'), import('../../stack/embedded.js'), import('../../../config/app/app-name.js'),
      ]);
      const app = await appNameOf(appArg);
      const { cluster, redis } = await connectToStack();
      try {
        const { removed, unreached } = await teardownApp(redis, cluster, app);
        if (removed.length) process.stdout.write(`${removed.map((r) => `removed ${r}`).join('\n')}\n`);
        if (unreached.length) {
          throw runtimeError(`teardown of ${app} is incomplete: ${unreached.join('; ')}`, {
            hint: `its containers there may still run. Start that engine (or fix its endpoint) and run \`jupiter teardown ${app}\` again; the deployment record is kept until then${opts.stack ? ', and the stack stays up' : ''}`,
          });
        }
        if (!removed.length) process.stdout.write(`nothing of ${app} was deployed\n`);
      } finally {
        redis.disconnect();
      }
      if (opts.stack) for (const line of await stopStack(cluster)) process.stdout.write(`${line}\n`);
    }));
}
