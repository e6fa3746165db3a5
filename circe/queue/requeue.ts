// Jobs held by a runner that is gone go back to their queue at once. Each task has one runner,
// so when a runner starts, every active job of its queue was held by an earlier runner of the
// task that died (a crash, a killed container, a lost node). Left alone, BullMQ redelivers such
// a job only after its lock expires and a stalled check sees it (up to twice the lock time: a
// minute with the defaults); moving it back to `wait` with its own lock token (Job.moveToWait)
// hands it over now, without counting a failed attempt. Should the old runner still be alive
// after all (a network partition), it merely repeats work that the done markers and the sink's
// dedup make harmless.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';

/** Move the active jobs of a task's queue back to waiting; returns how many moved. */
export async function requeueHeldJobs(redis: Redis, queuePrefix: string, task: string): Promise<number> {
  const queue = new Queue(task, { connection: redis, prefix: queuePrefix });
  queue.on('error', () => undefined);
  let moved = 0;
  try {
    for (const job of await queue.getActive()) {
      if (!job?.id) continue;
      const token = await redis.get(`${queue.toKey(job.id)}:lock`);
      try {
        await job.moveToWait(token ?? undefined);
        moved++;
      } catch {
        // finished or taken over meanwhile: nothing to recover
      }
    }
  } finally {
    await queue.close();
  }
  return moved;
}
