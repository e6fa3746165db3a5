import { expect } from 'chai';
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys } from '../../circe/queue/keys.js';
import { BUNDLE_MAX, type BundleJob, type Delivery } from '../../circe/queue/naming.js';
import { pipeline } from '../../circe/queue/pipeline.js';
import { parseSettings } from '../../circe/queue/settings.js';
import { AppQueues, execOrThrow, type QueuedJob } from '../../circe/queue/transport.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

const delivery = (item: string, name: string, to = 't1'): QueuedJob => ({
  queue: to,
  d: { id: `d-${item}-${name}-${to}`, item, name, blob: `b-${item}-${name}`, from: 'home', size: 3 } as Delivery,
});

describe('adds in the caller\'s pipeline (AppQueues.addTo, real Redis)', function () {
  this.timeout(20_000);
  let redis: TestRedis;
  let client: Redis;
  let n = 0;
  let app: string;
  let queues: AppQueues;

  before(async () => {
    redis = await startTestRedis();
  });
  after(async () => {
    await redis.stop();
  });
  beforeEach(() => {
    // A fresh connection each time: BullMQ's scripts are not yet defined on it.
    client = connectRedis(redis.url);
    app = `pa${n++}`;
    queues = new AppQueues(client, 'pa:', app, parseSettings(null));
  });
  afterEach(async () => {
    await queues.close();
    client.disconnect();
  });

  async function jobsOf(queue: string): Promise<Array<Job<BundleJob>>> {
    const q = queues.queue(queue);
    return (await q.getJobs(['wait'])) as Array<Job<BundleJob>>;
  }

  it('sends the adds in the same write, after the commands already queued, as BullMQ jobs with our options', async () => {
    const jobs = [delivery('i1', 'a.txt'), delivery('i1', 'b.txt'), delivery('i1', 'a.txt', 't2')];
    // Made before BullMQ defined its scripts on this connection: the adds still go in.
    const pipe = pipeline(client);
    pipe.set('pa:before', '1');
    const check = await queues.addTo(pipe, jobs);
    expect(pipe.length, 'the SET, then one add per receiving queue').to.equal(3);
    const replies = await execOrThrow(pipe);
    check(replies);
    expect(replies[0]).to.equal('OK');
    const t1 = await jobsOf('t1');
    const t2 = await jobsOf('t2');
    expect(t1.map((j) => j.data.d.map((d) => d.name))).to.deep.equal([['a.txt', 'b.txt']]);
    expect(t1[0]!.name).to.equal('2 files');
    expect(t2.map((j) => j.name)).to.deep.equal(['a.txt']);
    expect(replies.slice(1)).to.have.members([t1[0]!.id, t2[0]!.id]);
    expect(t1[0]!.opts.attempts).to.equal(queues.jobOptions('x').attempts);
    expect(t1[0]!.opts.removeOnComplete).to.equal(true);
  });

  it('splits a queue\'s deliveries into bundles of BUNDLE_MAX', async () => {
    const jobs = Array.from({ length: BUNDLE_MAX + 1 }, (_, i) => delivery(`i${i}`, 'f.txt'));
    await queues.enqueue(jobs);
    const sizes = (await jobsOf('t1')).map((j) => j.data.d.length).sort((a, b) => a - b);
    expect(sizes).to.deep.equal([1, BUNDLE_MAX]);
  });

  it('adding the same deliveries again leaves one job (deterministic ids)', async () => {
    const jobs = [delivery('i1', 'a.txt')];
    await queues.enqueue(jobs);
    await queues.enqueue(jobs);
    expect(await jobsOf('t1')).to.have.length(1);
  });

  it('the jobs reach a worker with their deliveries, and complete', async () => {
    const jobs = [delivery('i1', 'a.txt'), delivery('i2', 'b.txt')];
    const seen: string[] = [];
    const worker = new Worker<BundleJob>('t1', async (job) => {
      seen.push(...job.data.d.map((d) => `${d.item}/${d.name}`));
    }, { connection: connectRedis(redis.url), prefix: appKeys('pa:', app).queuePrefix });
    try {
      const done = new Promise<void>((resolve) => worker.on('completed', () => resolve()));
      await queues.enqueue(jobs);
      await done;
      expect(seen.sort()).to.deep.equal(['i1/a.txt', 'i2/b.txt']);
    } finally {
      await worker.close();
    }
  });
});
