// The hooks of the in-process circe suites: one redis-server and client for the whole suite, and
// a fresh work folder for each test (optionally with an empty Redis).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { startTestRedis, type TestRedis } from './redis.js';

export interface CirceSuite {
  redis: TestRedis;
  client: Redis;
  /** This test's work folder (removed after it). */
  work: string;
}

/**
 * After each test, before its folder is removed (stop what writes into it): the closables
 * closeEach returns are closed in parallel, then afterEachTest runs.
 */
export function circeSuite(opts: {
  workPrefix: string;
  flushEach?: boolean;
  closeEach?: () => Array<{ close(): Promise<void> }>;
  afterEachTest?: () => Promise<void>;
}): CirceSuite {
  const s = {} as CirceSuite;
  before(async () => {
    s.redis = await startTestRedis();
    s.client = connectRedis(s.redis.url);
  });
  after(async () => {
    await s.client.quit();
    await s.redis.stop();
  });
  beforeEach(async () => {
    s.work = mkdtempSync(join(tmpdir(), opts.workPrefix));
    if (opts.flushEach) await s.client.flushall();
  });
  afterEach(async () => {
    await Promise.all((opts.closeEach?.() ?? []).map((c) => c.close()));
    await opts.afterEachTest?.();
    rmSync(s.work, { recursive: true, force: true });
  });
  return s;
}
