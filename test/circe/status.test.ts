// `status` reads BullMQ's keys directly (two pipelined round trips, no Queue object per task):
// files held by a runner's job, delayed for a retry and waiting are split as BullMQ itself would
// report them, against a real Redis and real BullMQ jobs.
import { expect } from 'chai';
import { Queue, Worker } from 'bullmq';
import { appKeys, getStatus } from '../../circe/index.js';
import { circeSuite } from '../support/circe-suite.js';
import { fixtureAppDir, specOf } from './support.js';

const PREFIX = 'jst:';

describe('circe status', function () {
  this.timeout(20_000);
  const rig = circeSuite({ workPrefix: 'jupiter-status-', flushEach: true });

  it('splits a task\'s queued files into held by the runner, delayed and waiting, as BullMQ holds them', async () => {
    const app = specOf(fixtureAppDir('pyjoin'));
    const k = appKeys(PREFIX, app.name);
    const queue = new Queue('left', { connection: rig.client, prefix: k.queuePrefix, skipVersionCheck: true });
    // BullMQ leaves a connection it was given open: ours to close (else it retries a stopped Redis
    // for the rest of the run, printing an unhandled error event each time).
    const conn = rig.client.duplicate();
    const worker = new Worker('left', null, { connection: conn, prefix: k.queuePrefix, autorun: false, skipVersionCheck: true });
    try {
      await queue.add('b', { d: [{ id: 'f1' }, { id: 'f2' }] }, { jobId: 'j1' });
      const job = await worker.getNextJob('tok');
      expect(job?.id).to.equal('j1');
      await queue.add('b', { d: [{ id: 'f3' }] }, { jobId: 'j2', delay: 60_000 });
      await queue.add('b', { d: [{ id: 'f4' }] }, { jobId: 'j3' });
      await rig.client.sadd(k.queued('left'), 'f1', 'f2', 'f3', 'f4');
      await rig.client.hset(k.stats, 'processed:left', 5, 'items:submitted', 3, 'items:done', 1);
      const st = await getStatus(rig.client, PREFIX, app);
      const left = st.tasks.find((t) => t.task === 'left')!;
      expect(left).to.include({ active: 2, delayed: 1, waiting: 1, processed: 5 });
      expect(st.tasks.filter((t) => t.task !== 'left').every((t) => t.active + t.delayed + t.waiting === 0)).to.equal(true);
      expect(st.items).to.deep.equal({ submitted: 3, done: 1, inFlight: 2 });
    } finally {
      await worker.close(true);
      await queue.close();
      conn.disconnect();
    }
  });
});
