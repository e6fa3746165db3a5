// Jobs held by a runner that is gone go back to their queue at once. Each task has one runner,
// so when a runner starts, every active job of its queue was held by an earlier runner of the
// task that died (a crash, a killed container, a lost node). Left alone, BullMQ redelivers such
// a job only after its lock expires and a stalled check sees it (up to twice the lock time: a
// minute with the defaults); moving it back to `wait` with its own lock token (Job.moveToWait)
// hands it over now, without counting a failed attempt. Should the old runner still be alive
// after all (a network partition), it merely repeats work that the done markers and the sink's
// dedup make harmless. A bundle taken back is split at once (each file in a job of its own, no
// attempt counted), so that a file whose task crashes the runner is soon alone; a single file's
// job whose runners keep dying would come back forever: its own hash counts the take-backs, and
// after MAX_TAKEBACKS it is given up (its file becomes a dead letter).
import { Queue, UnrecoverableError, type Job } from './libs.js';
import type { Redis } from 'ioredis';
import type { BundleJob } from './naming.js';

/** Take-backs of a single file's job before it is given up (3 runs in all, like 3 attempts). */
export const MAX_TAKEBACKS = 2;

export interface Requeued {
  /** Jobs moved back to waiting. */
  moved: number;
  /** Bundles split into jobs of one file. */
  split: number;
  /** Jobs of one file given up. */
  givenUp: number;
  /**
   * Ids of the jobs now waiting that a dead runner held (moved back, or split from a bundle it
   * held): one of them may be what killed it.
   */
  suspects: string[];
}

/**
 * Take back the active jobs of a task's queue: move them to waiting, or hand them to `giveUp`
 * (which splits a bundle, or buries a single file, and returns the ids of the jobs it sent) and
 * end them.
 */
export async function requeueHeldJobs(
  redis: Redis, queuePrefix: string, task: string, giveUp: (job: Job<BundleJob>, err: Error) => Promise<string[]>,
): Promise<Requeued> {
  const queue = new Queue<BundleJob>(task, { connection: redis, prefix: queuePrefix });
  queue.on('error', () => undefined);
  const out: Requeued = { moved: 0, split: 0, givenUp: 0, suspects: [] };
  try {
    for (const job of await queue.getActive()) {
      if (!job?.id) continue;
      const key = queue.toKey(job.id);
      const token = (await redis.get(`${key}:lock`)) ?? '0';
      try {
        const times = await redis.hincrby(key, 'jupiterTakenBack', 1);
        if ((job.data?.d?.length ?? 0) > 1) {
          out.suspects.push(...(await giveUp(job, new Error('split after its runner died'))));
          // Its files travel on in their own jobs: this one is done (and removed).
          await job.moveToCompleted('split', token, false);
          out.split++;
        } else if (times > MAX_TAKEBACKS) {
          const err = new UnrecoverableError(`the runner of ${task} died ${times} times while holding this job`);
          await giveUp(job, err);
          await job.moveToFailed(err, token, false);
          out.givenUp++;
        } else {
          await job.moveToWait(token);
          out.moved++;
          out.suspects.push(job.id);
        }
      } catch {
        // finished or taken over meanwhile: nothing to recover
      }
    }
  } finally {
    await queue.close();
  }
  return out;
}
