// How much a runner (or the sink) holds at once: shared by both, kept apart from the runner so
// that the sink process does not load the task runner for two numbers.

/** Most jobs a runner holds beyond the ones it runs: enough to keep Redis round trips overlapped. */
export const PREFETCH = 32;

/** Input bytes a runner holds at once (at least one item, whatever its size). */
export const HELD_BYTES = 64 * 1024 * 1024;

/**
 * Bytes read (arrive) or written (commit) in one grouped Redis call, beyond its first item: on a
 * slow link a backlog then streams item by item (each item's bytes move, then it runs or leaves)
 * instead of moving as one unit that delays every item in it until the last byte is through.
 */
export const GROUP_BYTES = 1024 * 1024;

/**
 * Jobs a runner holds beyond the ones it runs while its inputs come from other nodes (direct
 * data path): the next item's transfer overlaps this one's run, the link never waits for the
 * task. One is enough: fetches from one node go one at a time anyway (circe/dataplane).
 */
export const FETCH_AHEAD = 1;

/**
 * Prefetch window after an item took `lastMs` with a running mean of `meanMs` per job: held jobs
 * wait about window x mean, kept under an eighth of the lock; none after an item that took longer.
 */
export function prefetchWindow(lastMs: number, meanMs: number, lockMs: number): number {
  if (lastMs > lockMs / 8) return 0;
  return Math.max(0, Math.min(PREFETCH, Math.floor(lockMs / 8 / Math.max(meanMs, 0.1))));
}
