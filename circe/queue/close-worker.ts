// Closing a BullMQ worker without hanging when Redis is away.
// Worker.close() waits for the jobs in hand, then for its blocking connection to end, and never
// resolves while that connection cannot reach Redis (bullmq#4656, still open for 6.7): a runner or
// sink told to stop with the deployment's Redis gone waited for its supervisor's SIGKILL (15 s).
// With Redis away the jobs in hand could not be committed anyway; they stay active in Redis, and
// once it is back their locks expire and BullMQ hands them out again (tasks run at least once; the
// done markers keep outputs exactly once at the sink). The closing BullMQ started goes on in the
// background and ends the worker's connections; nothing keeps the process alive.
import type { Redis } from 'ioredis';

/** What a runner or sink logs when it stopped without its worker's close. */
export const STOPPED_AWAY = 'Redis unreachable: stopped without waiting for the jobs in hand (they are handed out again once Redis is back)';

/** How long the connection must have been away before the wait for a close ends. */
export const CLOSE_GIVE_UP_MS = 2000;

/**
 * Close `worker`; resolves when BullMQ's close does, or once `conn` (the worker's connection)
 * has not been ready for `giveUpMs` in a row. Returns whether the close finished.
 */
export async function closeWorker(worker: { close(): Promise<void> } | undefined, conn: Redis, giveUpMs = CLOSE_GIVE_UP_MS): Promise<boolean> {
  if (!worker) return true;
  let done = false;
  const closing = worker.close().catch(() => undefined).then(() => {
    done = true;
  });
  let awaySince: number | undefined;
  while (!done) {
    await Promise.race([closing, new Promise((r) => setTimeout(r, 100).unref())]);
    if (done) break;
    if (conn.status === 'ready') {
      awaySince = undefined;
    } else {
      awaySince ??= Date.now();
      if (Date.now() - awaySince >= giveUpMs) return false;
    }
  }
  return true;
}
