// The hooks of the in-process circe suites: one redis-server and client for the whole suite, and
// a fresh work folder for each test (optionally with an empty Redis).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { defaultWorkRoot, pruneAppWork, workAppsDir } from '../../circe/runner/work-slots.js';
import { startTestRedis, type TestRedis } from './redis.js';

/** The app folders under this machine's work root. */
function workApps(): string[] {
  try {
    return readdirSync(workAppsDir(defaultWorkRoot()));
  } catch {
    return [];
  }
}

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
  let appsBefore: string[] = [];
  before(async () => {
    appsBefore = workApps();
    s.redis = await startTestRedis();
    s.client = connectRedis(s.redis.url);
  });
  after(async () => {
    await s.client.quit();
    await s.redis.stop();
    // In-process runners remove their own slots when closed, not the app and task folders above
    // them (a runtime's teardown does that): prune the app folders this suite made (rmdir only,
    // so folders another process is using stay).
    for (const app of workApps()) if (!appsBefore.includes(app)) pruneAppWork(defaultWorkRoot(), app);
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
