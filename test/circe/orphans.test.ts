// OrphanWatch against a real Redis and real BullMQ workers: after a reconnect, a job active with
// this worker's lock that its processor does not have goes back to waiting; a job in hand and a
// job another worker holds stay where they are.
import { expect } from 'chai';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { Queue, Worker } from '../../circe/queue/libs.js';
import { OrphanWatch } from '../../circe/queue/orphans.js';
import type { Redis } from 'ioredis';

const PREFIX = 'jorph';

async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('circe: jobs a lost reply left locked to a worker go back to waiting (OrphanWatch)', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let conn: Redis;
  let other: Redis;
  let queue: Queue;
  let mine: Worker;
  let theirs: Worker;
  let watch: OrphanWatch | undefined;

  beforeEach(async () => {
    redis = await startTestRedis();
    conn = connectRedis(redis.url);
    other = connectRedis(redis.url);
    queue = new Queue('t', { connection: other, prefix: PREFIX });
    // autorun off: jobs are fetched by hand, as a lost reply of moveToFinished leaves them.
    mine = new Worker('t', null, { connection: conn, prefix: PREFIX, autorun: false });
    theirs = new Worker('t', null, { connection: other, prefix: PREFIX, autorun: false });
    await Promise.all([mine.waitUntilReady(), theirs.waitUntilReady()]);
  });

  afterEach(async () => {
    await watch?.stop();
    await Promise.all([mine.close(), theirs.close(), queue.close()]);
    conn.disconnect();
    other.disconnect();
    await redis.stop();
  });

  async function held(): Promise<{ orphan: string; inHand: string; foreign: string }> {
    for (const name of ['a', 'b', 'c']) await queue.add(name, {}, { jobId: name });
    const orphan = (await mine.getNextJob(`${mine.id}:7`))!.id!;
    const inHand = (await mine.getNextJob(`${mine.id}:8`))!.id!;
    const foreign = (await theirs.getNextJob(`${theirs.id}:1`))!.id!;
    return { orphan, inHand, foreign };
  }

  it('after a reconnect: the orphan is waiting again, the job in hand and the foreign job stay active', async () => {
    const { orphan, inHand, foreign } = await held();
    const lines: string[] = [];
    watch = new OrphanWatch({ connection: conn, queuePrefix: PREFIX, queue: 't', workerId: mine.id, inHand: (id) => id === inHand, settleMs: 100, confirmMs: 300, log: (l) => lines.push(l) });
    conn.disconnect(true);
    await until(async () => (await queue.getJobState(orphan)) === 'waiting', 10_000, 'the orphan to be waiting');
    expect(await queue.getJobState(inHand)).to.equal('active');
    expect(await queue.getJobState(foreign)).to.equal('active');
    expect(lines).to.deep.equal(['t: 1 job(s) a lost Redis reply had left locked to this runner went back to waiting']);
    // No attempt was counted: it is handed out again as it was.
    const again = (await mine.getNextJob(`${mine.id}:9`))!;
    expect(again.id).to.equal(orphan);
    expect(again.attemptsMade).to.equal(0);
  });

  it('without a reconnect nothing is looked at; a job that reaches the processor between the looks stays', async () => {
    const { orphan, inHand: b } = await held();
    const inHand = new Set<string>([b]);
    watch = new OrphanWatch({ connection: conn, queuePrefix: PREFIX, queue: 't', workerId: mine.id, inHand: (id) => inHand.has(id), settleMs: 100, confirmMs: 300 });
    await new Promise((r) => setTimeout(r, 500));
    expect(await queue.getJobState(orphan)).to.equal('active');
    const sweep = watch.sweep();
    await new Promise((r) => setTimeout(r, 100));
    inHand.add(orphan); // the processor got it after the first look
    expect(await sweep).to.equal(0);
    expect(await queue.getJobState(orphan)).to.equal('active');
  });

  it('stop() ends a sweep waiting between its looks', async () => {
    await held();
    watch = new OrphanWatch({ connection: conn, queuePrefix: PREFIX, queue: 't', workerId: mine.id, inHand: () => false, confirmMs: 60_000 });
    const sweep = watch.sweep();
    await new Promise((r) => setTimeout(r, 100));
    // confirmMs is 60 s, the test's time-out 30 s: the sweep must end with stop().
    await watch.stop();
    expect(await sweep).to.equal(0);
    watch = undefined;
  });
});
