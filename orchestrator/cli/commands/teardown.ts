// `jupiter teardown <app>`: remove every container/process, queue and key of the app.
// <app> takes the forms deploy takes (a name under apps/ or a folder path). When an engine of
// the deployment cannot be reached, it says which (exit 1) and `--stack` leaves the stack up:
// stopping Redis under running containers would leave them looping on a refused connection.
import type { Command } from 'commander';
import { action } from '../run.js';
import { runtimeError } from '../../../config/errors.js';

/** What may still run after a teardown that could not reach an engine (exit 1). */
function incomplete(app: string, unreached: string[], stack?: boolean): Error {
  return runtimeError(`teardown of ${app} is incomplete: ${unreached.join('; ')}`, {
    hint: `its containers there may still run. Start that engine (or fix its endpoint) and run \`jupiter teardown ${app}\` again; the deployment record is kept until then${stack ? ', and the stack stays up' : ''}`,
  });
}

export function register(program: Command): void {
  program
    .command('teardown <app>')
    .description('remove every runner, queue and Redis key of a deployed app (name or folder) and report what was removed')
    .option('--stack', 'also stop the embedded stack (private Redis, hub, local agents)')
    .action(action(async (appArg: string, opts: { stack?: boolean }) => {
      const [{ connectToStack }, { teardownApp, teardownRunners }, { stopStack }, { appNameOf }, { loadClusterConfig }, { readDeploymentFile, forgetFile }] = await Promise.all([
        import('../../connect.js'), import('../../deploy/teardown.js'), import('../../stack/embedded.js'), import('../../../config/app/app-name.js'),
        import('../../../config/cluster/load.js'), import('../../deploy/record.js'),
      ]);
      const app = await appNameOf(appArg);
      const cluster = await loadClusterConfig();
      const saved = readDeploymentFile(cluster.stateDir, app);
      const conn = await connectToStack().catch((e: unknown) => {
        // No Redis, but the state folder remembers a deployment: its runners still go below.
        if (!saved) throw e;
        process.stderr.write(`jupiter: ${(e as { message: string }).message}; removing the runners the state folder records (Redis keys of ${app} stay)\n`);
        return undefined;
      });
      if (!conn) {
        const { removed, unreached } = await teardownRunners(cluster, app, saved);
        if (removed.length) process.stdout.write(`${removed.map((r) => `removed ${r}`).join('\n')}\n`);
        if (unreached.length) throw incomplete(app, unreached, opts.stack);
        forgetFile(cluster.stateDir, app);
        if (opts.stack) for (const line of await stopStack(cluster)) process.stdout.write(`${line}\n`);
        return;
      }
      const { redis } = conn;
      try {
        const { removed, unreached } = await teardownApp(redis, conn.cluster, app);
        if (removed.length) process.stdout.write(`${removed.map((r) => `removed ${r}`).join('\n')}\n`);
        if (unreached.length) throw incomplete(app, unreached, opts.stack);
        if (!removed.length) process.stdout.write(`nothing of ${app} was deployed\n`);
      } finally {
        redis.disconnect();
      }
      if (opts.stack) for (const line of await stopStack(cluster)) process.stdout.write(`${line}\n`);
    }));
}
