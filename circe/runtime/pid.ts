// Whether a process still runs. A zombie (exited, not yet reaped by its parent) or a dead entry
// counts as gone: where PID 1 reaps slowly, waiting for zombies would stretch every stop to its
// full grace time.
import { readFileSync } from 'node:fs';

/**
 * The fields of /proc/<pid>/stat after the command name (index 0 is field 3, the state); throws
 * when there is none. The name may hold spaces and parentheses, so the split is at the last ')'.
 */
export function procStat(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

export function isAlive(pid: number | null | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return !/^[ZX]/.test(procStat(pid)[0]!);
  } catch {
    return process.platform !== 'linux'; // no /proc elsewhere: kill(0) said it exists
  }
}

/**
 * Whether `pid` is alive and was started with `name=value` in its environment. A pid read from a
 * state file may since have been given by the kernel to an unrelated process (the runner died,
 * pids wrapped: pid_max is 32768 on many machines); signalling that one would kill a stranger.
 * Unreadable (another user's process): not ours.
 */
export function isAliveWith(pid: number | null | undefined, name: string, value: string): boolean {
  if (!isAlive(pid)) return false;
  if (process.platform !== 'linux') return true;
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`${name}=${value}`);
  } catch {
    return false;
  }
}

let bootSec: number | undefined;

/** When process `pid` started, in ms since the epoch (Linux /proc); undefined where unknown. */
export function processStartMs(pid: number): number | undefined {
  try {
    bootSec ??= Number(/^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))?.[1]);
    // Field 22, starttime, in clock ticks since boot (USER_HZ: 100 on Linux).
    const ticks = Number(procStat(pid)[19]);
    return Number.isFinite(bootSec) && Number.isFinite(ticks) ? bootSec * 1000 + ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is alive and started no later than `recordedAt` (ms), when the record naming it
 * was written: a process that started afterwards got the pid after ours had gone. 2 s of slack
 * for the boot time's whole seconds.
 */
export function isAliveSince(pid: number | null | undefined, recordedAt: number | undefined): boolean {
  if (!isAlive(pid)) return false;
  if (recordedAt === undefined) return true;
  const started = processStartMs(pid!);
  return started === undefined || started <= recordedAt + 2000;
}

/**
 * SIGTERM, then SIGKILL after graceMs if it still runs; true if it was running. A process that
 * exits between the check and the signal (ESRCH) is simply gone.
 */
export async function stopPid(pid: number, graceMs = 3000): Promise<boolean> {
  if (!isAlive(pid)) return false;
  const signal = (s: NodeJS.Signals): void => {
    try {
      process.kill(pid, s);
    } catch {
      // gone already
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (isAlive(pid)) signal('SIGKILL');
  return true;
}
