// The shared shape of the CLI fault suites: a CliSandbox (temporary working directory with its
// own embedded stack) and a client of that stack's Redis, both cleaned up after the suite.
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { CliSandbox } from './faults.js';

export interface CliSuite {
  box: CliSandbox;
  /** The stack's Redis (connected on first call, once the stack runs; disconnected after the suite). */
  redis(): Redis;
}

/** Register after(): disconnect the client, then tear down `app` and the stack (box.dispose). */
export function cliSuite(tmpPrefix: string, app: string): CliSuite {
  const box = new CliSandbox(tmpPrefix);
  let client: Redis | undefined;
  after(async () => {
    client?.disconnect();
    await box.dispose(app);
  });
  return {
    box,
    redis: () => (client ??= connectRedis(box.stack().redis!.url)),
  };
}
