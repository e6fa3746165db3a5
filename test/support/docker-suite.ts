// The before() hook of every real-dockerd suite: start the engines it needs, or skip the suite
// with the printed reason (not root, no dockerd, dockerd fails to start here).
import { dockerdSkipReason, startTestDockerd, type TestDockerd } from './dockerd.js';

type StartOpts = Parameters<typeof startTestDockerd>[0];

/** Start one engine per entry of opts (in parallel), or skip; engines already up are stopped before skipping. */
export async function startDockerdsOrSkip(ctx: Mocha.Context, opts: StartOpts[]): Promise<TestDockerd[]> {
  const reason = dockerdSkipReason();
  if (reason) {
    console.log(`      skipped: ${reason}`);
    ctx.skip();
  }
  const started = await Promise.allSettled(opts.map((o) => startTestDockerd(o)));
  const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    console.log(`      skipped: dockerd cannot start here: ${(failed.reason as Error).message}`);
    await Promise.all(started.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    ctx.skip();
  }
  return started.map((r) => (r as PromiseFulfilledResult<TestDockerd>).value);
}

/** Start one engine, or skip the suite. */
export async function startDockerdOrSkip(ctx: Mocha.Context, opts?: StartOpts): Promise<TestDockerd> {
  const [engine] = await startDockerdsOrSkip(ctx, [opts]);
  return engine!;
}
