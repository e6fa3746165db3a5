// What an emulated host's engine can leave running when it did not stop cleanly. dockerd removes
// its containers and stops its containerd when asked; a dockerd killed after its grace time (a
// loaded machine), or one whose containers would not go, leaves its containerd, a
// containerd-shim per container and, under each shim, that container's processes. They hold the
// host's cgroup, mounts under the exec root and the folders, so `testbed down` finds them by
// the folders named on their command lines and kills each with everything under it.
import { readdirSync, readFileSync } from 'node:fs';
import { isAlive, isAliveWith, procStat } from '../../circe/runtime/pid.js';

export interface ProcLine {
  pid: number;
  /** The command line, arguments separated by spaces. */
  cmd: string;
}

/** Every process of this machine with its command line (one that ends while being read is left out). */
export function processCmdlines(): ProcLine[] {
  const out: ProcLine[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      out.push({ pid: Number(p), cmd: readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ') });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** pid -> parent pid (field 4 of /proc/<pid>/stat). */
function parentPids(pids: number[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    try {
      out.set(pid, Number(procStat(pid)[1]));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The pids given and every process below them. */
export function withDescendants(roots: number[], parents: Map<number, number>): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parents) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const seen = new Set<number>();
  const stack = [...roots];
  while (stack.length) {
    const pid = stack.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return [...seen];
}

/**
 * SIGKILL every process whose command line names one of these folders, and everything below it,
 * then wait up to waitMs for them to be gone; the pids killed.
 */
export async function killProcessesUnder(folders: string[], waitMs = 5000): Promise<number[]> {
  const procs = processCmdlines().filter((p) => p.pid !== process.pid);
  const roots = procs.filter((p) => folders.some((f) => names(p.cmd, f))).map((p) => p.pid);
  if (roots.length === 0) return [];
  return killAndWait(withDescendants(roots, parentPids(procs.map((p) => p.pid))), waitMs);
}

/** The processes (but this one) started with `name=value` in their environment. */
export function processesWithEnv(name: string, value: string): number[] {
  return processCmdlines().map((p) => p.pid).filter((pid) => pid !== process.pid && isAliveWith(pid, name, value));
}

/**
 * SIGKILL every process started with `name=value` in its environment (a testbed's hub: given its
 * Redis URL there), then wait up to waitMs; the pids killed.
 */
export function killProcessesWithEnv(name: string, value: string, waitMs = 5000): Promise<number[]> {
  return killAndWait(processesWithEnv(name, value), waitMs);
}

async function killAndWait(pids: number[], waitMs: number): Promise<number[]> {
  killAll(pids);
  const deadline = Date.now() + waitMs;
  while (pids.some(isAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  return pids;
}

/** The folder itself or a path under it: /run/jtb5/node1 is not named by /run/jtb5/node10. */
function names(cmd: string, folder: string): boolean {
  const padded = `${cmd} `;
  return padded.includes(`${folder}/`) || padded.includes(`${folder} `);
}

export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}
