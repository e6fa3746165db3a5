// The embedded stack's private Docker engine. With the docker runtime, local nodes on the default
// socket, and no engine answering there, Jupiter starts its own dockerd the way it starts its
// private Redis: own socket, data-root, exec-root and pidfile under <stateDir>/docker, no bridge
// and no iptables rules (containers use host networking), stopped and removed by `stack down`.
// It needs root and the dockerd binary; without them the error says how to get an engine.
import { spawn, execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { ClusterConfig, NodeConfig } from '../../config/types.js';
import { runtimeError } from '../../config/errors.js';
import { DEFAULT_DOCKER_SOCKET } from '../../config/cluster/load.js';
import { ensureBaseImage } from '../../circe/runtime/docker-base.js';
import { newDocker } from '../../circe/runtime/docker-engine.js';
import type { Progress } from '../progress.js';
import { withStep } from '../progress.js';
import { isAlive, stopPid, type StackState } from './state.js';

export type DockerdState = NonNullable<StackState['dockerd']>;

/** Unix socket paths are limited to 107 bytes; containerd's lives deep under the exec root. */
const MAX_SOCKET = 100;

function usesDefaultSocket(n: NodeConfig): boolean {
  return n.docker?.kind === 'socket' && n.docker.socketPath === DEFAULT_DOCKER_SOCKET;
}

function localNodes(cluster: ClusterConfig): NodeConfig[] {
  return [cluster.home, ...cluster.nodes].filter(usesDefaultSocket);
}

/** Point the nodes on the default socket at the running private engine (no-op without one). */
export function usePrivateEngine(cluster: ClusterConfig, state: StackState): void {
  const d = state.dockerd;
  if (!d || !isAlive(d.pid)) return;
  for (const n of localNodes(cluster)) n.docker = { kind: 'socket', socketPath: d.socket };
}

async function answers(socketPath: string): Promise<boolean> {
  if (!existsSync(socketPath)) return false;
  try {
    await newDocker({ socketPath, timeout: 3000 }).ping();
    return true;
  } catch {
    return false;
  }
}

/** Whether a command is on the PATH. */
export function onPath(bin: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why no private engine can start here, or undefined when one can. */
export function privateEngineBlocker(): string | undefined {
  if (process.platform !== 'linux') return 'a private engine needs Linux';
  if (process.getuid?.() !== 0) return 'a private engine needs root (dockerd runs as root)';
  if (!onPath('dockerd')) return 'dockerd is not installed';
  return undefined;
}

function paths(dir: string): { root: string; socket: string; data: string; exec: string; pidfile: string; log: string } {
  const root = join(dir, 'docker');
  // containerd's socket is <exec-root>/containerd/containerd.sock: a deep checkout would make it
  // too long for a unix socket, so the exec root then moves to /run, named after the state folder.
  let exec = join(root, 'exec');
  if (`${exec}/containerd/containerd-debug.sock`.length > MAX_SOCKET) {
    exec = `/run/jupiter-docker-${createHash('sha256').update(dir).digest('hex').slice(0, 12)}`;
  }
  return { root, socket: join(root, 'docker.sock'), data: join(root, 'data'), exec, pidfile: join(root, 'docker.pid'), log: join(dir, 'logs', 'dockerd.log') };
}

export interface DockerdPaths {
  socket: string;
  data: string;
  exec: string;
  pidfile: string;
  log: string;
}

/**
 * Start a dockerd with its own socket, data-root, exec-root and pidfile, no bridge and no iptables
 * rules, detached; resolves once it answers. `wrap` prefixes the command (the testbed's
 * `nsenter --net=...` puts the engine in a host's network namespace).
 */
export async function spawnDockerd(p: DockerdPaths, extra: string[], wrap: string[] = [], what = 'the private dockerd'): Promise<number> {
  const fd = openSync(p.log, 'a');
  const argv = [
    ...wrap, 'dockerd',
    `--host=unix://${p.socket}`, `--data-root=${p.data}`, `--exec-root=${p.exec}`, `--pidfile=${p.pidfile}`,
    '--bridge=none', '--iptables=false', '--ip-masq=false', ...extra,
  ];
  const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited = false;
  child.once('exit', () => (exited = true));
  child.once('error', () => (exited = true));
  const deadline = Date.now() + 30_000;
  while (!(await answers(p.socket))) {
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill('SIGKILL');
      const tail = existsSync(p.log) ? readFileSync(p.log, 'utf8').trim().split('\n').slice(-3).join('\n') : '';
      throw runtimeError(`${what} did not start${exited ? '' : ' within 30 s'}:\n${tail}`, { file: p.log });
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.unref();
  return child.pid!;
}

async function launch(dir: string, extra: string[]): Promise<{ pid: number; socket: string; exec: string }> {
  const p = paths(dir);
  mkdirSync(p.root, { recursive: true, mode: 0o700 });
  mkdirSync(join(dir, 'logs'), { recursive: true });
  rmSync(p.socket, { force: true });
  const pid = await spawnDockerd(p, extra);
  return { pid, socket: p.socket, exec: p.exec };
}

/**
 * With the docker runtime: make sure the local nodes have an engine. Uses a running private engine,
 * else the default socket when it answers, else starts a private one (and its base image).
 * Returns true when it started something.
 */
export async function ensurePrivateEngine(cluster: ClusterConfig, dir: string, state: StackState, progress: Progress): Promise<boolean> {
  if (cluster.runtime !== 'docker' || localNodes(cluster).length === 0) return false;
  if (state.dockerd && isAlive(state.dockerd.pid) && (await answers(state.dockerd.socket))) {
    usePrivateEngine(cluster, state);
    return false;
  }
  if (await answers(DEFAULT_DOCKER_SOCKET)) return false;
  const blocker = privateEngineBlocker();
  if (blocker) {
    throw runtimeError(`no Docker engine answers at unix://${DEFAULT_DOCKER_SOCKET}, and Jupiter cannot start a private one: ${blocker}`, {
      hint: 'start one (`sudo dockerd &`), point DOCKER_HOST at a running engine, or run Jupiter as root with docker.io installed (`sudo npm run setup`) so it starts its own',
    });
  }
  await withStep(progress, 'Starting private Docker engine', async (step) => {
    let started: Awaited<ReturnType<typeof launch>>;
    let driver = 'overlay2';
    try {
      started = await launch(dir, ['--storage-driver=overlay2']);
    } catch {
      // e.g. a state folder on overlayfs (inside a container): vfs always works, only slower.
      driver = 'vfs';
      removeEngineFiles(dir);
      started = await launch(dir, ['--storage-driver=vfs']);
    }
    state.dockerd = { pid: started.pid, socket: started.socket, execRoot: started.exec, startedAt: Date.now() };
    step.update(`unix://${started.socket} (${driver})`);
  });
  usePrivateEngine(cluster, state);
  await withStep(progress, 'Creating the base image in the private engine', async (step) => {
    const r = await ensureBaseImage(newDocker({ socketPath: state.dockerd!.socket }), { name: cluster.docker.baseImage, onProgress: (m) => step.update(m) });
    step.update(`${r.name}${r.created ? ` (${(r.bytes / 1e6).toFixed(0)} MB)` : ''}`);
  });
  return true;
}

/** Unmount what dockerd left mounted under these folders (netns files of its exec root), deepest first. */
export function unmountUnder(roots: string[]): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '')
    .filter((m) => roots.some((r) => m === r || m.startsWith(`${r}/`))).reverse();
  for (const m of mounts) {
    try { execFileSync('umount', ['-l', m], { stdio: 'ignore' }); } catch { /* already gone */ }
  }
}

/** Mounts dockerd leaves behind go first, then the folders. */
function removeEngineFiles(dir: string, execRoot?: string): void {
  const p = paths(dir);
  const roots = [p.root, execRoot ?? p.exec];
  unmountUnder(roots);
  for (const r of roots) {
    try { rmSync(r, { recursive: true, force: true }); } catch { /* still busy: left for the next stack down */ }
  }
}

/** Remove every container of an engine, then stop it (SIGTERM, SIGKILL after 20 s); a line per thing done. */
export async function stopDockerd(pid: number, socket: string, what = 'the private Docker engine'): Promise<string[]> {
  const out: string[] = [];
  if (!isAlive(pid)) return out;
  const docker = newDocker({ socketPath: socket });
  try {
    const all = await docker.listContainers({ all: true });
    await Promise.all(all.map((c) => docker.getContainer(c.Id).remove({ force: true })));
    if (all.length) out.push(`removed ${all.length} container(s) of ${what}`);
  } catch {
    // the engine no longer answers: stopping it below is all that is left
  }
  await stopPid(pid, 20_000);
  out.push(`stopped dockerd (pid ${pid})`);
  return out;
}

/** Remove every container of the private engine, stop it and delete its folders; a line per thing done. */
export async function stopPrivateEngine(dir: string, state: StackState): Promise<string[]> {
  const d = state.dockerd;
  if (!d) return [];
  const out = await stopDockerd(d.pid, d.socket);
  removeEngineFiles(dir, d.execRoot);
  return out;
}
