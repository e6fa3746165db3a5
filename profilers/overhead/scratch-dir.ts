// The probes' scratch folders (a scratch app, its runners' work, a store) carry the pid of the
// agent that made them, so that a later agent removes those of agents that died mid-probe: a
// probe cleans up after itself, but not after kill -9 (a lost node, a test's killed agent; one CI
// run left six in /tmp). Only folders of pids that no longer run are removed: a live agent's
// probe is using its own.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type ScratchKind = 'taskprobe' | 'hopprobe' | 'overhead';

const NAME = /^jupiter-(taskprobe|hopprobe|overhead)-(\d+)-[A-Za-z0-9]{6}$/;

/** A new scratch folder of this process for a probe of `kind`. */
export function scratchDir(kind: ScratchKind): Promise<string> {
  return mkdtemp(join(tmpdir(), `jupiter-${kind}-${process.pid}-`));
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // there, but not ours to signal
  }
}

/**
 * Remove a probe's scratch folder. Retried: a runner whose close gave up on a Redis gone away
 * (CLOSE_GIVE_UP_MS) may still be finishing an item in its work folder, and a file made while rm
 * walks the tree fails it with ENOTEMPTY. What is still there after the retries is removed by a
 * later agent's sweep once this one has exited.
 */
export async function removeScratch(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }).catch(() => undefined);
}

/** Remove the scratch folders in `dir` whose agent no longer runs; returns their paths. */
export async function sweepScratchDirs(dir = tmpdir()): Promise<string[]> {
  const gone: string[] = [];
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const m = NAME.exec(name);
    if (!m || running(Number(m[2]))) continue;
    const path = join(dir, name);
    await removeScratch(path);
    gone.push(path);
  }
  return gone;
}
