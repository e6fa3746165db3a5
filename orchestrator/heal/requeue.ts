// Items held by the runners of a lost node go back to their queues at once. Each task has one
// runner, so when a task's node is lost, every active job of that task's queue was held by the
// dead runner. Left alone, BullMQ redelivers such a job only after its lock expires and a stalled
// check sees it (up to twice the lock time: a minute with the defaults); moving it back to `wait`
// with its own lock token (Job.moveToWait) hands it to the new runner as soon as that starts,
// without counting a failed attempt. Should the old runner still be alive after all (a network
// partition), it merely repeats work that the done markers and the sink's dedup make harmless.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { appKeys } from '../../circe/queue/keys.js';

/** Move the active jobs of the given tasks' queues back to waiting; returns how many moved. */
export async function requeueHeldJobs(redis: Redis, prefix: string, app: string, tasks: string[]): Promise<number> {
  const keys = appKeys(prefix, app);
  let moved = 0;
  for (const task of tasks) {
    const queue = new Queue(task, { connection: redis, prefix: keys.queuePrefix });
    queue.on('error', () => undefined);
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
  }
  return moved;
}
