// Tests start their own redis-server on a free loopback port and stop it afterwards.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';

export interface TestRedis {
  url: string;
  server: RedisServer;
  stop(): Promise<void>;
}

export async function startTestRedis(opts: { appendOnly?: boolean } = {}): Promise<TestRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'jupiter-redis-'));
  const server = await new RedisServer({ dir, appendOnly: opts.appendOnly }).start();
  return {
    url: server.url,
    server,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
