// Original Jupiter task scripts find their own files at /centralized_scheduler/ (the original
// image copied scripts/ there): `open('/centralized_scheduler/communication.txt')`,
// `os.system('/centralized_scheduler/generate_random_files.sh ...')`. An app whose scripts name
// that path gets it, unchanged:
//   docker runtime   the image holds a copy of scripts/ at /centralized_scheduler (docker-image.ts)
//                    and sets JUPITER_CENTRALIZED=image;
//   process runtime  each Python worker (and helper script) runs in a private mount namespace
//                    (`unshare --mount`) where a private copy of scripts/ is bind-mounted at
//                    /centralized_scheduler; the host only gets the empty mount point. This needs
//                    root and util-linux `unshare`; without them deploy stops with what to do.
// Such tasks also get the original's environment (TASK, FLAG, INPUTNUM, CHILD_NODES, HOME_NODE,
// NODE_NAME) and run with /centralized_scheduler as working directory, their module imported
// from there (so `__file__` is /centralized_scheduler/<task>.py, as in the original).
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inputError } from '../../config/errors.js';
import { HOME, type AppSpec, type TaskSpec } from '../../config/types.js';

export const CENTRALIZED = '/centralized_scheduler';
/** Set (to `image`) in app images that hold the scripts at CENTRALIZED. */
export const CENTRALIZED_ENV = 'JUPITER_CENTRALIZED';

const SCAN_MAX_BYTES = 1024 * 1024;
const scanned = new Map<string, boolean>();

function scan(dir: string): boolean {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '__pycache__' || e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (scan(p)) return true;
    } else if (e.isFile() && statSync(p).size <= SCAN_MAX_BYTES && readFileSync(p).includes(CENTRALIZED)) {
      return true;
    }
  }
  return false;
}

/** Whether any file of the app's scripts/ names /centralized_scheduler (cached per folder). */
export function usesCentralized(app: Pick<AppSpec, 'dir'>): boolean {
  const dir = join(app.dir, 'scripts');
  let found = scanned.get(dir);
  if (found === undefined) {
    found = existsSync(dir) && scan(dir);
    scanned.set(dir, found);
  }
  return found;
}

/** The variables the original's start_worker.sh gave a task's pod. */
export function originalTaskEnv(task: TaskSpec, node: string): Record<string, string> {
  return {
    TASK: task.name,
    FLAG: String(task.broadcast),
    INPUTNUM: String(task.numInputs),
    CHILD_NODES: task.children.join(':'),
    HOME_NODE: HOME,
    NODE_NAME: node,
  };
}

/** Copy scripts/ to `dest` with shell scripts executable (the original ran them by path). */
export function stageScripts(app: Pick<AppSpec, 'dir'>, dest: string): void {
  rmSync(dest, { recursive: true, force: true });
  cpSync(join(app.dir, 'scripts'), dest, { recursive: true, dereference: true, filter: (src) => !src.includes('__pycache__') });
  const exec = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) exec(p);
      else if (e.name.endsWith('.sh')) chmodSync(p, 0o755);
    }
  };
  exec(dest);
  for (const sub of ['input', 'output']) mkdirSync(join(dest, sub), { recursive: true });
}

function hasUnshare(): boolean {
  try {
    execFileSync('unshare', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Process runtime: check that runners can get a private /centralized_scheduler, and create the
 * (empty) mount point. Throws an input error naming the path, the tasks and the fixes.
 */
export function ensureCentralizedMountPoint(app: AppSpec): void {
  const tasks = app.tasks.map((t) => t.name);
  const hint = 'deploy with the docker runtime (--runtime docker), which puts the scripts there in the image; or run jupiter as root on a Linux machine with util-linux `unshare`';
  const what = `the scripts of ${app.name} open files under ${CENTRALIZED}/ (tasks ${tasks.slice(0, 8).join(', ')}${tasks.length > 8 ? ', ...' : ''})`;
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    throw inputError(`${what}: the process runtime mounts the scripts there in a private mount namespace per runner, which needs root`, { file: join(app.dir, 'scripts'), hint });
  }
  if (!hasUnshare()) {
    throw inputError(`${what}: the process runtime needs the unshare command (util-linux) to mount them there`, { file: join(app.dir, 'scripts'), hint: `install util-linux (apt-get install util-linux), or ${hint}` });
  }
  if (!existsSync(CENTRALIZED)) mkdirSync(CENTRALIZED, { mode: 0o755 });
  else if (!statSync(CENTRALIZED).isDirectory()) {
    throw inputError(`${CENTRALIZED} exists and is not a folder: ${what}`, { file: CENTRALIZED, hint: `move that file away, or ${hint}` });
  }
}

export interface Launch {
  /** Folder the module is imported from, and the working directory. */
  scriptsDir: string;
  env: Record<string, string>;
  /** Wraps a command so that it sees the scripts at CENTRALIZED (process runtime). */
  wrap(cmd: string, args: string[]): { cmd: string; args: string[] };
  /** Removes the private copy. */
  cleanup(): void;
}

/** Why this process cannot run such an app's tasks (no root, no unshare); undefined if it can. */
export function centralizedUnavailable(app: AppSpec): string | undefined {
  if (process.env[CENTRALIZED_ENV] === 'image') return undefined;
  try {
    ensureCentralizedMountPoint(app);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * How a task of an app that uses /centralized_scheduler is started; undefined for other apps.
 * `workRoot` holds the private copy of scripts/ in the process runtime.
 */
export function centralizedLaunch(app: AppSpec, task: TaskSpec, node: string, workRoot: string): Launch | undefined {
  if (!usesCentralized(app)) return undefined;
  const env = originalTaskEnv(task, node);
  if (process.env[CENTRALIZED_ENV] === 'image') {
    return { scriptsDir: CENTRALIZED, env, wrap: (cmd, args) => ({ cmd, args }), cleanup: () => undefined };
  }
  ensureCentralizedMountPoint(app);
  // A fresh owner-only folder (mkdtemp: 0700, unguessable) holds the copy: the work root may be
  // world-writable (/dev/shm, /tmp), and root runs what is bound here.
  mkdirSync(workRoot, { recursive: true });
  const own = mkdtempSync(join(workRoot, `jupiter-cs-${app.name}-${task.name}-`));
  const copy = join(own, 'scripts');
  stageScripts(app, copy);
  return {
    scriptsDir: CENTRALIZED,
    env,
    // unshare without --fork execs in place, and so does sh: the pid is the command's own.
    wrap: (cmd, args) => ({
      cmd: 'unshare',
      args: ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', `mount --bind "$0" ${CENTRALIZED} && exec "$@"`, copy, cmd, ...args],
    }),
    cleanup: () => rmSync(own, { recursive: true, force: true }),
  };
}
