// Work folders of a task runner. Each invocation slot (one per item the runner may run at once)
// owns a pathin/pathout pair that is emptied after every item, so each item still starts with
// empty folders, without creating and removing two folders per item. Folders are named
// `<pid>-<runner>-s<slot>[.<generation>]` (<runner> counts the runners of this process); a
// runner removes those of processes that no longer exist.
// On tmpfs a folder's size counts its entries (each adds the same amount, its removal takes it
// off), so one stat tells whether a folder is empty: an item's reset removes the files the
// runner knows of (the inputs it wrote, the outputs the task returned) and reads a folder's
// listing only when the size says something else was left there. A listing is an open, two
// getdents and a close per folder: a reset took 32-33 µs per item that way, 19 µs now, for a
// task that reads its input and writes one output (test/circe/work-slots.test.ts).
import { isAlive } from '../runtime/pid.js';
import { accessSync, constants, mkdirSync, readdirSync, rmdirSync, rmSync, statfsSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * Work folders live on a RAM file system when there is a roomy one (/dev/shm): file operations
 * on a journaled disk cost milliseconds per item, on tmpfs microseconds.
 */
export function defaultWorkRoot(): string {
  try {
    const st = statfsSync('/dev/shm');
    accessSync('/dev/shm', constants.W_OK);
    if (st.bavail * st.bsize >= 1024 ** 3) return '/dev/shm';
  } catch {
    // no /dev/shm here
  }
  return tmpdir();
}

/**
 * Direct data path: a task's outputs enter the node's store by a hard link when the work folders
 * are on the store's file system, by a copy otherwise (in a container the work folder is a tmpfs
 * and the store a volume: 1 MiB read and written again, ~1.4 ms of CPU per item on the testbed's
 * VM, where a link costs ~0.05 ms). Work folders that would be elsewhere go to
 * `<store>/.work/<task>` (one runner per task uses it; the store only counts blob-named files).
 */
export function besideStore(parent: string, store: string, task: string): string {
  mkdirSync(parent, { recursive: true });
  if (statSync(parent).dev === statSync(store).dev) return parent;
  return join(store, '.work', task);
}

const SLOT_DIR = /^(\d+)-\d+-s\d+(\.\d+)?$/;
const TMPFS_MAGIC = 0x01021994;

/** An empty folder's size where its size counts its entries (tmpfs), else -1 (unknown). */
function emptySize(dir: string): number {
  try {
    return Number(statfsSync(dir).type) === TMPFS_MAGIC ? statSync(dir).size : -1;
  } catch {
    return -1;
  }
}
let opened = 0;

/** Empty a folder: plain unlink for files (the usual case), rm -r for anything else. */
function emptyDir(dir: string): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) rmSync(p, { recursive: true, force: true });
    else unlinkSync(p);
  }
}

export class WorkSlot {
  pathin = '';
  pathout = '';
  /** Taken by an item right now. */
  busy = false;
  /** Files of the item in the slot that the runner knows of (inputs written, outputs returned). */
  readonly known: string[] = [];
  private removed = false;
  private generation = 0;
  private emptyIn = -1;
  private emptyOut = -1;

  constructor(private readonly parent: string, private readonly name: string) {
    this.fresh();
  }

  private get dir(): string {
    return join(this.parent, this.generation ? `${this.name}.${this.generation}` : this.name);
  }

  private fresh(): void {
    rmSync(this.dir, { recursive: true, force: true });
    this.pathin = join(this.dir, 'input');
    this.pathout = join(this.dir, 'output');
    mkdirSync(this.pathin, { recursive: true });
    mkdirSync(this.pathout);
    this.emptyIn = emptySize(this.pathin);
    this.emptyOut = emptySize(this.pathout);
  }

  /**
   * Empty one folder: the known files, then a listing only if its size says more is there. Its
   * size first: a task that moved its input away (to its output, or into the store) leaves an empty
   * folder, and an unlink that fails costs Node an exception per call (~30 µs of a stage's ~350 per
   * item in bench:peers' JavaScript pipeline).
   */
  private clear(dir: string, empty: number): void {
    if (empty < 0) return emptyDir(dir);
    if (statSync(dir).size === empty) return;
    for (const p of this.known) {
      if (dirname(p) !== dir) continue;
      try {
        unlinkSync(p);
      } catch {
        // moved or removed by the task; the size check below decides
      }
    }
    if (statSync(dir).size !== empty) emptyDir(dir);
  }

  /** Empty both folders for the next item (a task that left something unremovable costs a new folder). */
  reset(): void {
    if (this.removed) return;
    try {
      this.clear(this.pathin, this.emptyIn);
      this.clear(this.pathout, this.emptyOut);
    } catch {
      const old = this.dir;
      this.generation++;
      try {
        rmSync(old, { recursive: true, force: true });
      } catch {
        // left behind; the next runner of this task removes it (its pid is gone by then)
      }
      this.fresh();
    } finally {
      this.known.length = 0;
    }
  }

  remove(): void {
    this.removed = true;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A name made safe as one folder name (app, task and node names become folders). */
export const safeDir = (s: string): string => s.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80);

/** The folder of every app's work folders on this machine: `<root>/jupiter-work`. */
export function workAppsDir(root: string): string {
  return join(root, 'jupiter-work');
}

/** The folder of an app's work folders on this machine: `<root>/jupiter-work/<app>`. */
export function appWorkDir(root: string, app: string): string {
  return join(workAppsDir(root), safeDir(app));
}

/** The parent of one task's work slots: `<root>/jupiter-work/<app>/<task>`. */
export function taskWorkDir(root: string, app: string, task: string): string {
  return join(appWorkDir(root, app), safeDir(task));
}

/** Remove the slot folders under `parent` whose process no longer exists. */
function removeDeadSlots(parent: string): void {
  for (const name of readdirSync(parent)) {
    const m = SLOT_DIR.exec(name);
    if (m && Number(m[1]) !== process.pid && !isAlive(Number(m[1]))) rmSync(join(parent, name), { recursive: true, force: true });
  }
}

/**
 * After an app's runners are gone: remove the slot folders they left (a runner killed on
 * teardown does not remove its own) and the app's folders that are then empty. Folders of live
 * processes (the same app name deployed by another cluster on this machine) stay, and so do
 * their parents. Returns whether it removed the app's folder.
 */
export function pruneAppWork(root: string, app: string): boolean {
  const dir = appWorkDir(root, app);
  let tasks: string[];
  try {
    tasks = readdirSync(dir);
  } catch {
    return false;
  }
  for (const t of tasks) {
    const parent = join(dir, t);
    try {
      removeDeadSlots(parent);
      rmdirSync(parent);
    } catch {
      // not a folder, or still in use
    }
  }
  try {
    rmdirSync(dir);
    return true;
  } catch {
    return false;
  }
}

/** Slots under `<parent>/<pid>-<runner>-s<i>`, after removing folders left by dead processes. */
export function openSlots(parent: string, count: number): WorkSlot[] {
  mkdirSync(parent, { recursive: true });
  removeDeadSlots(parent);
  const runner = opened++;
  return Array.from({ length: count }, (_, i) => new WorkSlot(parent, `${process.pid}-${runner}-s${i}`));
}
