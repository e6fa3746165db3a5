// Tests start their own redis-server on a free loopback port and stop it afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';

export interface TestRedis {
  url: string;
  /** The server running (a new one after restart()). */
  server: RedisServer;
  /** SIGKILL the server (a Redis gone without a goodbye) and wait for it to exit. */
  kill(): Promise<void>;
  /** Start a server again on the same port and folder (after kill()). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startTestRedis(opts: { appendOnly?: boolean } = {}): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'jupiter-redis-'));
  const first = await new RedisServer({ dir, appendOnly: opts.appendOnly }).start();
  const t: TestRedis = {
    url: first.url,
    server: first,
    async kill() {
      if (t.server.pid) process.kill(t.server.pid, 'SIGKILL');
      await t.server.stop(); // waits for the exit
    },
    async restart() {
      t.server = await new RedisServer({ dir, appendOnly: opts.appendOnly, port: first.port }).start();
    },
    async stop() {
      await t.server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return t;
}
