// One Docker engine per compute host, inside the host's network namespace: `nsenter --net=...
// dockerd` (`ip netns exec` remounts /sys and dockerd then finds no cgroups), with its own socket,
// exec-root and pidfile under /run/jtb<id>/<host>, its own data-root under /var/lib/jtb<id>/<host>,
// no bridge and no iptables rules: containers use host networking, i.e. the host's namespace.
// A host's CPU limit is a cgroup of ours that dockerd puts every container under (--cgroup-parent),
// so the agent and the runners there share that much CPU, like on a machine of that size.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnDockerd, stopDockerd, unmountUnder } from '../stack/dockerd.js';
import { processStartMs } from '../../circe/runtime/pid.js';
import { killAll, killProcessesUnder } from './procs.js';
import { nsWrap } from './sh.js';
import { ownsPid, type EngineState, type HostState, type TestbedState } from './state.js';

const CGROUP_ROOT = '/sys/fs/cgroup';
const CFS_PERIOD_US = 100_000;

/** v1 (a cpu controller folder) or v2 (unified); undefined when neither can be written. */
function cgroupLayout(): 'v1' | 'v2' | undefined {
  if (existsSync(join(CGROUP_ROOT, 'cpu', 'cpu.cfs_quota_us'))) return 'v1';
  if (existsSync(join(CGROUP_ROOT, 'cgroup.controllers'))) return 'v2';
  return undefined;
}

/** Create the host's cgroup with its CPU quota; its name (dockerd's --cgroup-parent), or undefined. */
function createCpuCgroup(name: string, cpus: number): string | undefined {
  const layout = cgroupLayout();
  const quota = Math.max(1000, Math.round(cpus * CFS_PERIOD_US));
  if (layout === 'v1') {
    const dir = join(CGROUP_ROOT, 'cpu', name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(CFS_PERIOD_US));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quota));
    return name;
  }
  if (layout === 'v2') {
    const dir = join(CGROUP_ROOT, name);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'cpu.max'), `${quota} ${CFS_PERIOD_US}`);
    return name;
  }
  return undefined;
}

/** rmdir a cgroup folder and what the engine left in it, deepest first. */
function removeCgroupTree(dir: string): boolean {
  if (!existsSync(dir)) return false;
  for (const e of readdirSync(dir)) {
    const sub = join(dir, e);
    try {
      if (statSync(sub).isDirectory()) removeCgroupTree(sub);
    } catch {
      // gone meanwhile
    }
  }
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** The processes in a cgroup folder and the folders below it. */
function cgroupPids(dir: string): number[] {
  const out: number[] = [];
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) out.push(...cgroupPids(join(dir, e.name)));
      else if (e.name === 'cgroup.procs') out.push(...readFileSync(join(dir, e.name), 'utf8').split('\n').filter(Boolean).map(Number));
    }
  } catch {
    // gone meanwhile
  }
  return out;
}

/**
 * Remove a cgroup of ours from every controller; true when one was there and is gone. A cgroup
 * with a process in it cannot go: what is still in it (a container's process its engine left,
 * or one still exiting) is ours alone and is killed, and the removal is tried again for waitMs.
 */
export async function removeCgroup(name: string, waitMs = 10_000): Promise<boolean> {
  const dirs = cgroupDirs(name);
  if (dirs.length === 0) return false;
  const deadline = Date.now() + waitMs;
  for (;;) {
    killAll(dirs.flatMap(cgroupPids));
    if (dirs.map((d) => removeCgroupTree(d) || !existsSync(d)).every(Boolean)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Every controller folder (v1) or the unified tree (v2) that holds a cgroup of that name. */
export function cgroupDirs(name: string): string[] {
  const dirs = [join(CGROUP_ROOT, name)];
  try {
    for (const c of readdirSync(CGROUP_ROOT)) dirs.push(join(CGROUP_ROOT, c, name));
  } catch {
    // no cgroup filesystem
  }
  return dirs.filter((d) => existsSync(d));
}

export async function startEngine(state: TestbedState, host: HostState, logDir: string): Promise<EngineState> {
  const run = join(state.runRoot, host.name);
  const data = join(state.dataRoot, host.name);
  mkdirSync(run, { recursive: true, mode: 0o700 });
  mkdirSync(data, { recursive: true, mode: 0o700 });
  mkdirSync(logDir, { recursive: true });
  const paths = { socket: join(run, 'docker.sock'), data, exec: join(run, 'exec'), pidfile: join(run, 'docker.pid'), log: join(logDir, `dockerd-${host.name}.log`) };
  const cgroup = host.cpus !== undefined ? createCpuCgroup(`${state.bridge.replace(/br$/, '')}-${host.name}`, host.cpus) : undefined;
  const extra = [...(cgroup ? [`--cgroup-parent=/${cgroup}`] : [])];
  const wrap = nsWrap(host.ns);
  let pid: number;
  try {
    pid = await spawnDockerd(paths, ['--storage-driver=overlay2', ...extra], wrap, `the engine of ${host.name}`);
  } catch {
    // A data root on overlayfs (inside a container): vfs always works, only slower.
    unmountUnder([paths.exec, data]);
    rmSync(paths.exec, { recursive: true, force: true });
    pid = await spawnDockerd(paths, ['--storage-driver=vfs', ...extra], wrap, `the engine of ${host.name}`);
  }
  return { pid, startedAt: processStartMs(pid) ?? Date.now(), socket: paths.socket, dataRoot: data, execRoot: paths.exec, log: paths.log, ...(cgroup ? { cgroup } : {}) };
}

/** Remove the engine's containers, stop it, unmount and delete its folders and cgroup; lines of what went. */
export async function stopEngine(host: HostState): Promise<string[]> {
  const e = host.engine;
  if (!e) return [];
  // A pid reused since is not signalled (ownsPid); its folders still go.
  const out = ownsPid(e) ? await stopDockerd(e.pid, e.socket, `the engine of ${host.name}`) : [];
  // What a dockerd that was killed, or died, left running: its containerd, shims and containers.
  const run = join(e.socket, '..');
  const left = await killProcessesUnder([run, e.execRoot, e.dataRoot]);
  if (left.length) out.push(`killed ${left.length} process(es) its engine left running (containerd, shims, containers)`);
  unmountUnder([e.execRoot, e.dataRoot]);
  // Asynchronous: the engines' data roots (tens of thousands of image files each) go in parallel.
  await Promise.all([e.execRoot, e.dataRoot, run].map((d) => rm(d, { recursive: true, force: true })));
  if (e.cgroup) await removeCgroup(e.cgroup);
  return out;
}
