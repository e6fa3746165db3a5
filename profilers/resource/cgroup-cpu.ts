// The CPU limit of this process's cgroup and every ancestor it can see (the smallest quota wins):
// cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us, v2 cpu.max, walked from the path in
// /proc/self/cgroup up to the root. A process on a machine (a systemd slice with CPUQuota, a pod)
// sees the whole chain. A container sees only its own cgroup: its /sys/fs/cgroup is its own folder
// (the path in /proc/self/cgroup names folders that do not exist there), so a quota set on a parent
// (the testbed's hosts, dockerd --cgroup-parent) is invisible from inside, and what it can read is
// its own limit per container (docker.cpus), not the node's: then it reports none. The
// configuration declares those (nodes[].cpus), and a declared value wins over this one. (With a
// private cgroup namespace, v2's default, a container's path is "/" and its own limit counts.)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export type ReadText = (path: string) => string;

const readText: ReadText = (p) => readFileSync(p, 'utf8');

function tryRead(read: ReadText, path: string): string | undefined {
  try {
    return read(path);
  } catch {
    return undefined;
  }
}

/** '/a/b/c' -> ['/a/b/c', '/a/b', '/a', '/']. */
function upward(path: string): string[] {
  const parts = path.split('/').filter(Boolean);
  const out: string[] = [];
  for (let i = parts.length; i >= 0; i--) out.push(`/${parts.slice(0, i).join('/')}`);
  return out;
}

function visible(read: ReadText, dir: string, v2: boolean): boolean {
  return tryRead(read, join(dir, v2 ? 'cgroup.controllers' : 'cpu.cfs_period_us')) !== undefined;
}

/** One level's limit in cores; undefined when it has none (or no files). */
function levelLimit(read: ReadText, dir: string, v2: boolean): number | undefined {
  if (v2) {
    const max = tryRead(read, join(dir, 'cpu.max'))?.trim().split(/\s+/);
    if (!max || max[0] === 'max' || max[0] === undefined) return undefined;
    const quota = Number(max[0]);
    const period = Number(max[1] ?? 100000);
    return quota > 0 && period > 0 ? quota / period : undefined;
  }
  const quota = Number(tryRead(read, join(dir, 'cpu.cfs_quota_us'))?.trim());
  const period = Number(tryRead(read, join(dir, 'cpu.cfs_period_us'))?.trim());
  return quota > 0 && period > 0 ? quota / period : undefined;
}

/**
 * The smallest CPU quota (cores) on the way from this process's cgroup to the root, among the
 * levels it can see; undefined when none is set or there are no cgroups (not Linux).
 */
export function cgroupCpuLimit(read: ReadText = readText, root = '/sys/fs/cgroup'): number | undefined {
  const self = tryRead(read, '/proc/self/cgroup');
  if (self === undefined) return undefined;
  let best: number | undefined;
  const take = (v: number | undefined): void => {
    if (v !== undefined && (best === undefined || v < best)) best = v;
  };
  for (const line of self.split('\n')) {
    const m = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, id, controllers, path] = m as unknown as [string, string, string, string];
    const v2 = id === '0' && controllers === '';
    if (!v2 && !controllers.split(',').includes('cpu')) continue;
    const mounts = v2 ? [root] : [join(root, 'cpu'), join(root, 'cpu,cpuacct'), join(root, 'cpuacct,cpu')];
    for (const mount of mounts) {
      // Its own folder not there: a container, whose mount root is its own cgroup (a limit per
      // container, e.g. docker.cpus, not the node's): nothing to say about the node.
      if (path !== '/' && !visible(read, join(mount, path), v2)) continue;
      for (const p of upward(path)) take(levelLimit(read, join(mount, p), v2));
    }
  }
  return best === undefined ? undefined : Math.round(best * 1000) / 1000;
}
