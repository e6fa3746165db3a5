// `jupiter teardown <app>`: remove every container/process, queue and key of the app.
import type { Command } from 'commander';
import { action } from '../run.js';

export function register(program: Command): void {
  program
    .command('teardown <app>')
    .description('remove every runner, queue and Redis key of a deployed app and report what was removed')
    .option('--stack', 'also stop the embedded stack (private Redis, hub, local agents)')
    .action(action(async (app: string, opts: { stack?: boolean }) => {
      const [{ connectToStack }, { teardownApp }, { stopStack }] = await Promise.all([
        import('../../connect.js'), import('../../deploy/teardown.js'), import('../../stack/embedded.js'),
      ]);
      const { cluster, redis } = await connectToStack();
      try {
        const removed = await teardownApp(redis, cluster, app);
        process.stdout.write(removed.length ? `${removed.map((r) => `removed ${r}`).join('\n')}\n` : `nothing of ${app} was deployed\n`);
      } finally {
        redis.disconnect();
      }
      if (opts.stack) for (const line of await stopStack(cluster)) process.stdout.write(`${line}\n`);
    }));
}
