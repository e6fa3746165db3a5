// A node's store of output bytes on the direct data path: one file per blob, in a folder only
// the runners of one deployment on one node share (owner-only). The producer keeps the bytes
// here until every receiver has taken them (the blob's record in Redis is gone), so a receiver
// cut off by a failed link finds them when the link returns: store and forward.
// The store is bounded in bytes: a producer whose store is full waits (back-pressure) rather
// than fill the node's disk or RAM.
// A file is removed once its blob's record is gone (every receiver took it). Until its run's commit
// has made that record, a missing record means "not yet", not "gone": such files are kept for a
// grace period. A file whose commit came back is marked (read-only for its owner, COMMITTED_MODE),
// so any runner sweeping the folder may remove it as soon as its record is gone: with the grace
// alone, taken files stayed 60-70 s, and a stream of 1 MiB items through three tasks of one node
// filled the default 1 GiB in seconds and then ran at what the sweeps freed (7-15 items/s against
// ~60 with the store kept small).
import { chmodSync, closeSync, existsSync, fstatSync, linkSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { copyFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Blob ids are sha1 hex (naming.ts blobIdFor): anything else is refused, so no path can escape. */
export const BLOB_ID = /^[0-9a-f]{40}$/;

export function checkBlobId(id: string): void {
  if (!BLOB_ID.test(id)) throw new Error(`not a blob id: ${JSON.stringify(id.slice(0, 60))}`);
}

/** Mode of a file whose run's commit came back (still owner-only; a fresh file is 0o600). */
export const COMMITTED_MODE = 0o400;

export interface StoreOptions {
  /** Bytes the store may hold; a put beyond waits for space. */
  maxBytes: number;
  /** How long a full store makes a producer wait before it gives up (ms). */
  waitMs: number;
  /** Called when a put has to wait for room (the owner sweeps then, not at its next interval). */
  onFull?: () => void;
}

/**
 * Whether files in `dir` keep the modes they are given: a fresh file reads 0600 and a marked one
 * 0400. Where a mount decides modes (vfat's fmask, say) a fresh file could read as marked and go
 * before its commit; there, files wait out the grace.
 */
function modesHold(dir: string): boolean {
  const probe = join(dir, `.modes.${process.pid}`);
  try {
    closeSync(openSync(probe, 'w', 0o600));
    chmodSync(probe, 0o600);
    if ((statSync(probe).mode & 0o777) !== 0o600) return false;
    chmodSync(probe, COMMITTED_MODE);
    return (statSync(probe).mode & 0o777) === COMMITTED_MODE;
  } catch {
    return false;
  } finally {
    rmSync(probe, { force: true });
  }
}

export interface PutOptions {
  /** The bytes come from a run that holds inputs kept in this store (it frees them when it commits). */
  freesInputs?: boolean;
}

/** A store counts its folder again after putting this share of its budget (see usedBytes). */
const RECOUNT_SHARE = 8;

export class NodeStore {
  private used = 0;
  /** Bytes of this process's puts under way: granted room, not yet counted in `used`. */
  private reserved = 0;
  /** Bytes this store put since it last counted the folder. */
  private sinceCount = 0;
  private waiters: Array<() => void> = [];

  /** Whether modes mark committed files here (a file system that shows its own modes cannot). */
  private readonly marks: boolean;

  constructor(readonly dir: string, readonly opts: StoreOptions) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.marks = modesHold(dir);
    this.recount();
  }

  /**
   * Bytes held now: the folder's files as last counted (at every sweep, and after each eighth of the
   * budget this store put) plus this store's puts since. Runners of one node in processes of their
   * own put into one folder and see each other's puts at their next count, so the folder holds at
   * most about an eighth of the budget more per runner; counted at sweeps alone it held up to a
   * budget per runner (three times the budget with three tasks on one node).
   */
  get usedBytes(): number {
    return this.used;
  }

  /** Count the folder (a readdir and a stat per file). */
  private recount(): void {
    this.used = this.scan().reduce((s, f) => s + f.size, 0);
    this.sinceCount = 0;
  }

  private added(size: number): void {
    this.used += size;
    this.sinceCount += size;
    if (this.sinceCount * RECOUNT_SHARE >= this.opts.maxBytes) this.recount();
  }

  private path(id: string): string {
    checkBlobId(id);
    return join(this.dir, id);
  }

  /**
   * Wait until `size` more bytes fit (back-pressure), or give up after the store's `waitMs`. A put
   * for a run whose inputs this store holds never waits: those inputs go when the run commits, and
   * only it can take them. Tasks of one node share the store, and the first of a chain would
   * otherwise fill it with what the second must take, leaving the second no room for its outputs
   * (every runner of the node waiting, for ever). The budget then holds back what enters the node;
   * what is inside (at most the runs in its work slots) may finish.
   */
  private async room(size: number, freesInputs = false): Promise<void> {
    const deadline = Date.now() + this.opts.waitMs;
    // Puts under way count: concurrent puts (a runner's slots) each saw the room free before any
    // was counted, and together went past the budget.
    while (!freesInputs && this.used + this.reserved > 0 && this.used + this.reserved + size > this.opts.maxBytes) {
      this.opts.onFull?.();
      if (Date.now() > deadline) {
        throw new Error(`the node's data store is full (${this.used + this.reserved} of ${this.opts.maxBytes} bytes held for receivers that have not taken them) after waiting ${this.opts.waitMs} ms`);
      }
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 200).unref();
      });
    }
    this.reserved += size;
  }

  /** A put that was granted room ended: its bytes are counted as held (`kept`), or were never kept. */
  private settled(size: number, kept: boolean): void {
    this.reserved -= size;
    if (kept) this.added(size);
  }

  /** Keep `bytes` under `id`; waits while the store is full. Written to a temp name, then renamed: a reader never sees half a file. */
  async put(id: string, bytes: Buffer, opts: PutOptions = {}): Promise<void> {
    const path = this.path(id);
    await this.room(bytes.length, opts.freesInputs);
    let kept = false;
    try {
      const tmp = `${path}.${process.pid}.tmp`;
      await writeFile(tmp, bytes, { mode: 0o600 });
      await rename(tmp, path);
      kept = true;
    } finally {
      this.settled(bytes.length, kept);
    }
  }

  /**
   * Keep the file at `src` (`size` bytes, a task's output) under `id`, without its bytes passing
   * through this process: a hard link when the store is on the same file system, else a copy made
   * by the kernel. Waits while the store is full, like put().
   */
  async putFile(id: string, src: string, size: number, opts: PutOptions = {}): Promise<void> {
    const path = this.path(id);
    await this.room(size, opts.freesInputs);
    let kept = false;
    try {
      const tmp = `${path}.${process.pid}.tmp`;
      // Metadata calls are synchronous (microseconds each, less than a thread-pool round trip);
      // only a copy of the bytes goes to the pool.
      rmSync(tmp, { force: true });
      try {
        // Only a file with no other name is linked: one that also lives elsewhere (a task that
        // linked its input or some file of its own as its output) is copied, so the store's chmod
        // and what happens to that other name never touch each other.
        if (statSync(src).nlink !== 1) throw new Error('has other names');
        linkSync(src, tmp);
        chmodSync(tmp, 0o600);
      } catch {
        // another file system (a container's tmpfs work folder, the node's data volume), no links,
        // or a file this process may not chmod
        rmSync(tmp, { force: true });
        await copyFile(src, tmp);
        chmodSync(tmp, 0o600);
      }
      renameSync(tmp, path);
      kept = true;
    } finally {
      this.settled(size, kept);
    }
  }

  /** An open file descriptor on `id` and its size (the caller closes it), or undefined when this node does not hold it. */
  open(id: string): { fd: number; size: number } | undefined {
    let fd: number;
    try {
      fd = openSync(this.path(id), 'r');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    try {
      return { fd, size: fstatSync(fd).size };
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Whether the store holds `id`. */
  has(id: string): boolean {
    return existsSync(this.path(id));
  }

  /**
   * Mark blobs whose runs' commit came back (accepted or refused): from now on a missing record
   * means they were taken (or never wanted), so a sweep removes them without waiting out the grace.
   */
  markCommitted(ids: string[]): void {
    for (const id of ids) {
      try {
        chmodSync(this.path(id), COMMITTED_MODE);
      } catch {
        // Swept already (taken before the commit's reply came), or a file system without modes:
        // unmarked, the file waits out the grace. Never an error: the commit itself went through.
      }
    }
  }

  /** Files of the store with their sizes, ages and whether their commit came back. */
  scan(): Array<{ id: string; size: number; mtimeMs: number; committed: boolean }> {
    const out: Array<{ id: string; size: number; mtimeMs: number; committed: boolean }> = [];
    for (const name of readdirSync(this.dir)) {
      if (!BLOB_ID.test(name)) continue;
      try {
        const st = statSync(join(this.dir, name));
        out.push({ id: name, size: st.size, mtimeMs: st.mtimeMs, committed: this.marks && (st.mode & 0o777) === COMMITTED_MODE });
      } catch {
        // removed meanwhile (another runner of the node swept it)
      }
    }
    return out;
  }

  /**
   * Remove the blobs nobody holds any more: `live` says, for a list of ids, which still have a
   * record in Redis. Files younger than `graceMs` are kept unless marked committed (their commit
   * may still be on its way). Several runners of one node may sweep the same folder: removals are
   * idempotent.
   */
  async sweep(live: (ids: string[]) => Promise<boolean[]>, graceMs: number, now = Date.now()): Promise<number> {
    const files = this.scan();
    const old = files.filter((f) => f.committed || now - f.mtimeMs >= graceMs);
    let removed = 0;
    for (let i = 0; i < old.length; i += 500) {
      const chunk = old.slice(i, i + 500);
      const alive = await live(chunk.map((f) => f.id));
      for (const [j, f] of chunk.entries()) {
        if (alive[j]) continue;
        await unlink(join(this.dir, f.id)).catch(() => undefined);
        removed++;
      }
    }
    this.recount();
    for (const w of this.waiters.splice(0)) w();
    return removed;
  }
}
