// The agent's overhead probe round with the deployment's Redis gone mid-round: BullMQ's
// Worker.close() never resolves then (bullmq#4656) and the probes' commands wait for Redis forever,
// so the round never ended, no later round ran and the agent could not stop. A round now ends by
// its deadline (or at once on stop), drops its connections and closes what it opened; what it
// left in Redis the next round removes. Without profilers/overhead/round.ts these tests hang until
// mocha's timeout.
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import { connectRedis, scanKeys } from '../../circe/queue/connection.js';
import { OverheadProber, defaultOverheadOptions, type OverheadOptions } from '../../profilers/overhead/prober.js';
import { ownTempFolder } from '../support/own-temp.js';
import { sleep, until } from '../support/faults.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

const PREFIX = 'jaway:';
const keys = redisKeys(PREFIX);
const ABANDONED = /^overhead probe round abandoned/;

/** This process's descendants other than the Redis servers and their own forks (an AOF rewrite after the restart), as "pid comm". */
function ownChildren(): string[] {
  const parent = new Map<number, { ppid: number; comm: string }>();
  for (const pid of readdirSync('/proc').filter((f) => /^\d+$/.test(f))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      parent.set(Number(pid), { ppid: Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]), comm });
    } catch {
      // gone meanwhile
    }
  }
  const redis = (pid: number): boolean => parent.get(pid)?.comm.startsWith('redis') === true;
  const mine = (pid: number): boolean => {
    if (redis(pid)) return false;
    for (let p = parent.get(pid)?.ppid; p; p = parent.get(p)?.ppid) {
      if (p === process.pid) return true;
      if (redis(p)) return false;
    }
    return false;
  };
  return [...parent].filter(([pid]) => mine(pid)).map(([pid, s]) => `${pid} ${s.comm}`);
}

/**
 * Waits until every descendant started since `before` (the probes' runners and Python workers) has
 * exited. Earlier suites in the same mocha process may leave long-lived helpers of their own; those
 * are in `before` and not this test's business.
 */
async function childrenGone(before: Set<string>): Promise<void> {
  // Said, not hidden: a process an earlier suite left behind is a leak worth seeing in the log.
  if (before.size > 0) console.log(`      left running by earlier suites: ${[...before].join(', ')}`);
  let left: string[] = [];
  try {
    await until(() => (left = ownChildren().filter((c) => !before.has(c))).length === 0 && ['none'], 30_000, "the probes' Python workers to exit");
  } catch (e) {
    throw new Error(`${(e as Error).message}; still running: ${left.join(', ')}`);
  }
}

describe('profilers: an overhead probe round with Redis gone', function () {
  this.timeout(240_000);
  let server: TestRedis | undefined;
  let redis: Redis | undefined;
  // The probes' scratch folders (runners' work, Python workers) must all be gone at the end.
  ownTempFolder(async () => {
    // stop() returns at once; the abandoned probe then closes its runner and removes its folder
    // (scratch-run.ts finally): given time to, as an agent's process would have.
    // The test Redis keeps its folder (jupiter-redis-*) until its stop below.
    const probes = (): string[] => readdirSync(tmpdir()).filter((n) => /^jupiter-(taskprobe|hopprobe|overhead)-/.test(n));
    await until(() => probes().length === 0 && ['gone'], 60_000, "the probes' scratch folders to be removed").catch(() => undefined);
    redis?.disconnect();
    await server?.stop();
  });
  before(async () => {
    // Append-only: what the killed round left is still there after the restart, for the next round to remove.
    server = await startTestRedis({ appendOnly: true });
    redis = connectRedis(server.url);
  });

  const prober = (logs: string[], o: Partial<OverheadOptions>): OverheadProber =>
    new OverheadProber(redis!, keys, 'n1', { ...defaultOverheadOptions(), samples: 3, homeProbeBytes: [1024, 4096], ...o }, (l) => void logs.push(l));
  /** Until the first round's task probe (a runner, a Python worker, a scratch app) is under way. */
  const inTaskProbe = (): Promise<string[]> => until(async () => (await scanKeys(redis!, `${PREFIX}*taskprobe-*`)).length > 0 && ['yes'], 60_000, 'the task probe', 5);
  /** Until the task probe's runner is up and its items flow (the probe polls for each one's finish). */
  const inTaskItems = (): Promise<string[]> => until(async () => (await scanKeys(redis!, `${PREFIX}*taskprobe-*rt:*`)).length > 0 && ['yes'], 60_000, "the task probe's items", 5);

  it('a round ends by its deadline when Redis is killed mid-round; once Redis is back a later round publishes and removes what it left', async () => {
    const logs: string[] = [];
    const before = new Set(ownChildren());
    // Long enough for a round on a busy 2-core host; the killed round waits for all of it.
    const p = prober(logs, { everyMs: 1000, roundDeadlineMs: 30_000 });
    p.start();
    try {
      await inTaskProbe();
      await server!.kill();
      await until(() => logs.some((l) => ABANDONED.test(l)), 90_000, 'the round abandoned');
      await server!.restart();
      await until(async () => (await redis!.exists(keys.overhead('n1'))) === 1, 120_000, 'a round published after the restart');
    } finally {
      await p.stop();
    }
    // One line per abandoned round, nothing else (no error of the dropped connections).
    expect(logs.filter((l) => !ABANDONED.test(l))).to.deep.equal([]);
    expect(logs.every((l) => !l.includes('\n'))).to.equal(true);
    // The abandoned round's scratch app and probe queue were removed by a later one.
    const left = (await scanKeys(redis!, `${PREFIX}*`)).filter((k) => k !== keys.overhead('n1') && !k.endsWith(':fit'));
    expect(left).to.deep.equal([]);
    await childrenGone(before);
  });

  it('stop() returns while a round waits on a Redis that is gone', async () => {
    const logs: string[] = [];
    const before = new Set(ownChildren());
    // A deadline beyond mocha's timeout: only stop can end this round.
    const p = prober(logs, { everyMs: 1000, roundDeadlineMs: 10 * 60_000 });
    p.start();
    try {
      // Mid-items: the probe's own polling, and not only its runner, then waits on the gone Redis.
      await inTaskItems();
      await server!.kill();
      await sleep(500); // the round's commands now wait on the missing Redis
    } finally {
      await p.stop();
    }
    expect(logs).to.deep.equal([]);
    await childrenGone(before);
    await server!.restart(); // for the after hook's stop
  });
});
