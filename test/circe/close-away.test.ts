// A runner or sink told to stop while the deployment's Redis is gone must still stop: BullMQ's
// Worker.close() alone never resolves then (bullmq#4656), and `teardown` with the stack's Redis
// gone waited for each supervisor's SIGKILL. Without circe/queue/close-worker.ts this test hangs
// until mocha's timeout.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import { Sink } from '../../circe/home/sink.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { configureApp } from '../../circe/queue/settings.js';
import { TaskRunner } from '../../circe/runner/task-runner.js';
import { startTestRedis } from '../support/redis.js';
import { fixtureAppDir } from './support.js';

const PREFIX = 'jaway:';

describe('circe: stopping with Redis gone', function () {
  this.timeout(30_000);

  it('a task runner and the sink close although Redis is unreachable', async () => {
    const redis = await startTestRedis();
    const out = mkdtempSync(join(tmpdir(), 'jupiter-away-'));
    try {
      const app = await loadApp(fixtureAppDir('jsline'));
      const admin = connectRedis(redis.url);
      await configureApp(admin, PREFIX, app.name, {});
      admin.disconnect();
      const logs: string[] = [];
      const log = (m: string): void => void logs.push(m);
      const task = app.tasks.find((t) => t.isDag)!;
      const runner = await TaskRunner.start({ app, task, node: 'n1', redisUrl: redis.url, prefix: PREFIX, workDir: join(out, 'work'), log });
      const sink = await Sink.start({ app: app.name, redisUrl: redis.url, prefix: PREFIX, outputDir: join(out, 'output'), log });
      await redis.server.stop();
      await Promise.all([runner.close(), sink.close()]);
      // Either BullMQ's close ended by itself, or the wait gave up and said why.
      expect(logs.filter((l) => !/ECONNREFUSED|worker error/.test(l) && !/Redis unreachable: stopped without waiting/.test(l))).to.deep.equal([]);
    } finally {
      await redis.stop().catch(() => undefined);
      rmSync(out, { recursive: true, force: true });
    }
  });
});
