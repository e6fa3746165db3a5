// Tar archives streamed to a Docker engine: build contexts and the base image's root filesystem.
// Entries are written one at a time, so a large context never sits in memory whole.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pack } from 'tar-stream';

export interface TarEntry {
  /** Path inside the archive, without a leading slash. */
  name: string;
  type: 'file' | 'directory' | 'symlink';
  mode: number;
  uid?: number;
  gid?: number;
  /** Contents of a small file. */
  data?: Buffer;
  /** Or: a file on this machine to copy (its size must be given). */
  source?: string;
  size?: number;
  /** Target of a symlink. */
  linkname?: string;
}

/** A readable tar stream of the entries; entries reading from disk are streamed in order. */
export function tarStream(entries: Iterable<TarEntry> | AsyncIterable<TarEntry>): Readable {
  const p = pack();
  void (async () => {
    for await (const e of entries) {
      const header = {
        name: e.type === 'directory' ? `${e.name.replace(/\/$/, '')}/` : e.name,
        type: e.type,
        mode: e.mode,
        uid: e.uid ?? 0,
        gid: e.gid ?? 0,
        mtime: new Date(0),
        linkname: e.linkname,
        size: e.type === 'file' ? (e.data?.length ?? e.size ?? 0) : 0,
      };
      if (e.type !== 'file') {
        await new Promise<void>((resolve, reject) => p.entry(header, (err) => (err ? reject(err) : resolve())));
      } else if (e.data) {
        const data = e.data;
        await new Promise<void>((resolve, reject) => p.entry(header, data, (err) => (err ? reject(err) : resolve())));
      } else if (e.source) {
        const done = new Promise<void>((resolve, reject) => {
          const sink = p.entry(header, (err) => (err ? reject(err) : resolve()));
          createReadStream(e.source as string).on('error', reject).pipe(sink as unknown as NodeJS.WritableStream);
        });
        await done;
      }
    }
    p.finalize();
  })().catch((err: Error) => p.destroy(err));
  // tar-stream's Pack is a streamx Readable, which Node's stream consumers (and dockerode) accept.
  return p as unknown as Readable;
}

/** Adds a directory entry (mode 0755, root unless listed explicitly) before the first entry below each folder. */
export function withParents(entries: TarEntry[]): TarEntry[] {
  const explicit = new Map(entries.filter((e) => e.type === 'directory').map((e) => [e.name, e]));
  const seen = new Set<string>();
  const out: TarEntry[] = [];
  const addDir = (dir: string): void => {
    if (seen.has(dir)) return;
    seen.add(dir);
    out.push(explicit.get(dir) ?? { name: dir, type: 'directory', mode: 0o755 });
  };
  for (const e of entries) {
    const parts = e.name.split('/');
    for (let i = 1; i < parts.length; i++) addDir(parts.slice(0, i).join('/'));
    if (e.type === 'directory') addDir(e.name);
    else out.push(e);
  }
  return out;
}
