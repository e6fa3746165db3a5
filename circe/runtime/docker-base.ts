// The base image made without any registry: this machine's node and python3 runtimes (binaries,
// the shared libraries `ldd` lists for them, python's standard library), sh/bash and basic tools, a non-root user `jupiter`
// (uid 10001), /tmp and /jupiter/data (owned by that user: the data volume's mount point), packed into a root filesystem tar and imported into the engine.
// Users with a registry can instead set docker.baseImage to e.g. `node:20-slim` (python3 must
// then be in that image for Python tasks).
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { inputError, runtimeError } from '../../config/errors.js';
import { tarStream, withParents, type TarEntry } from './docker-tar.js';
import { followProgress } from './docker-progress.js';

const run = promisify(execFile);

export const DEFAULT_BASE_IMAGE = 'jupiter/base:local';
export const RUNNER_UID = 10001;
/** Bumped when the layout of the base image changes, so older images are rebuilt. */
const BASE_FORMAT = '3';
export const BASE_PATH = '/usr/local/bin:/usr/bin:/bin';

export interface BaseImageResult {
  name: string;
  node: string;
  python: string;
  /** false when an image with the same versions already existed. */
  created: boolean;
  bytes: number;
  seconds: number;
}

interface PythonInfo {
  exe: string;
  version: string;
  stdlib: string;
  platstdlib: string;
}

/** The python3 to package: Debian's /usr/bin/python3 when present (predictable paths), else PATH's. */
export async function findPython(): Promise<PythonInfo | undefined> {
  const candidates = ['/usr/bin/python3', 'python3'];
  const script = 'import sys, sysconfig, json; print(json.dumps({"exe": sys.executable, "version": sys.version.split()[0], '
    + '"stdlib": sysconfig.get_path("stdlib"), "platstdlib": sysconfig.get_path("platstdlib")}))';
  for (const c of candidates) {
    try {
      const { stdout } = await run(c, ['-c', script]);
      return JSON.parse(stdout) as PythonInfo;
    } catch {
      // try the next candidate
    }
  }
  return undefined;
}

/** Absolute paths of the shared libraries (and the loader) the given ELF files need. */
export async function lddLibraries(files: string[]): Promise<string[]> {
  const libs = new Set<string>();
  for (let i = 0; i < files.length; i += 200) {
    let out = '';
    try {
      out = (await run('ldd', files.slice(i, i + 200), { maxBuffer: 64 << 20 })).stdout;
    } catch (e) {
      // ldd exits 1 when one of several files is not dynamic; its stdout is still complete.
      out = (e as { stdout?: string }).stdout ?? '';
      if (!out) throw runtimeError(`ldd failed: ${(e as Error).message}`, { hint: 'install the Debian package libc-bin' }, e);
    }
    for (const line of out.split('\n')) {
      const m = /=>\s+(\/\S+)\s+\(/.exec(line) ?? /^\s+(\/\S+)\s+\(/.exec(line);
      if (m?.[1]) libs.add(m[1]);
    }
  }
  return [...libs].sort();
}

/** A file as copied into the image at `at`: regular-file contents from the real path. */
function fileEntry(at: string, source: string): TarEntry {
  const st = statSync(source);
  return { name: at.replace(/^\//, ''), type: 'file', mode: st.mode & 0o755, source, size: st.size };
}

const PY_SKIP = new Set(['test', 'tests', 'idlelib', 'tkinter', 'turtledemo', 'ensurepip', 'lib2to3', 'site-packages', 'dist-packages']);

function walkStdlib(root: string, out: TarEntry[], elf: string[]): void {
  for (const name of readdirSync(root)) {
    if (PY_SKIP.has(name) || name.startsWith('config-')) continue;
    const full = join(root, name);
    const st = lstatSync(full);
    if (st.isSymbolicLink()) {
      // Debian links sitecustomize.py into /etc; keep links whose target exists, as regular files.
      if (!existsSync(full)) continue;
      const target = realpathSync(full);
      if (statSync(target).isFile()) out.push(fileEntry(full, target));
    } else if (st.isDirectory()) {
      walkStdlib(full, out, elf);
    } else if (st.isFile()) {
      out.push(fileEntry(full, full));
      if (name.endsWith('.so')) elf.push(full);
    }
  }
}

/** Shell tools copied from this machine into the base image (those that exist here). */
export const SHELL_TOOLS = ['sh', 'bash', 'dd', 'cat', 'cp', 'mv', 'rm', 'mkdir', 'ls', 'echo', 'sleep', 'head', 'tail', 'wc', 'touch',
  'chmod', 'env', 'sed', 'grep', 'sort', 'basename', 'dirname', 'date', 'true', 'false', 'printf', 'tr', 'cut', 'tee', 'stat'];

const PASSWD = `root:x:0:0:root:/root:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
jupiter:x:${RUNNER_UID}:${RUNNER_UID}:Jupiter task runner:/jupiter/work:/usr/sbin/nologin
`;
const GROUP = `root:x:0:
nogroup:x:65534:
jupiter:x:${RUNNER_UID}:
`;

/** Every entry of the base root filesystem, and the versions it carries. */
export async function baseRootfs(): Promise<{ entries: TarEntry[]; node: string; python: string }> {
  const entries: TarEntry[] = [];
  const elf: string[] = [];
  const nodeReal = realpathSync(process.execPath);
  entries.push(fileEntry('/usr/bin/node', nodeReal));
  elf.push(nodeReal);

  const py = await findPython();
  let python = 'none';
  if (py) {
    python = py.version;
    const pyReal = realpathSync(py.exe);
    entries.push(fileEntry(pyReal, pyReal));
    elf.push(pyReal);
    // Python finds its standard library relative to the real path of its executable.
    for (const link of new Set([py.exe, '/usr/bin/python3'])) {
      if (link !== pyReal) entries.push({ name: link.slice(1), type: 'symlink', mode: 0o777, linkname: pyReal });
    }
    walkStdlib(py.stdlib, entries, elf);
    if (relative(py.stdlib, py.platstdlib).startsWith('..')) walkStdlib(py.platstdlib, entries, elf);
  }

  // A POSIX shell and the everyday tools: original Jupiter task scripts call os.system() and
  // helper `.sh` scripts (e.g. `bash generate_random_files.sh` running dd).
  for (const tool of SHELL_TOOLS) {
    const found = ['/usr/bin', '/bin'].map((d) => join(d, tool)).find((p) => existsSync(p));
    if (!found) continue;
    const real = realpathSync(found);
    entries.push(fileEntry(`/usr/bin/${tool}`, real));
    elf.push(real);
  }
  if (!entries.some((e) => e.name === 'bin' || e.name.startsWith('bin/'))) entries.push({ name: 'bin', type: 'symlink', mode: 0o777, linkname: 'usr/bin' });

  const have = new Set(entries.map((e) => `/${e.name}`));
  for (const lib of await lddLibraries(elf)) {
    if (!have.has(lib)) {
      entries.push(fileEntry(lib, realpathSync(lib)));
      have.add(lib);
    }
  }
  entries.push(
    { name: 'etc/passwd', type: 'file', mode: 0o644, data: Buffer.from(PASSWD) },
    { name: 'etc/group', type: 'file', mode: 0o644, data: Buffer.from(GROUP) },
    { name: 'tmp', type: 'directory', mode: 0o1777 },
    { name: 'jupiter', type: 'directory', mode: 0o755 },
    { name: 'jupiter/work', type: 'directory', mode: 0o700, uid: RUNNER_UID, gid: RUNNER_UID },
    // The mount point of the node's data volume: a new volume takes this owner and mode.
    { name: 'jupiter/data', type: 'directory', mode: 0o700, uid: RUNNER_UID, gid: RUNNER_UID },
    { name: 'root', type: 'directory', mode: 0o700 },
    { name: 'proc', type: 'directory', mode: 0o755 },
    { name: 'sys', type: 'directory', mode: 0o755 },
    { name: 'dev', type: 'directory', mode: 0o755 },
  );
  return { entries: withParents(entries), node: process.version, python };
}

function dockerArch(): string {
  return ({ x64: 'x86_64', arm64: 'aarch64', arm: 'armv7l', ppc64: 'ppc64le', s390x: 's390x' } as Record<string, string>)[process.arch] ?? process.arch;
}

async function imageLabels(docker: Docker, name: string): Promise<Record<string, string> | undefined> {
  try {
    const info = await docker.getImage(name).inspect();
    return info.Config?.Labels ?? {};
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return undefined;
    throw e;
  }
}

/**
 * Create the base image on an engine unless one with the same node/python versions exists.
 * The engine must run on this machine's architecture (the binaries come from here).
 */
export async function ensureBaseImage(
  docker: Docker,
  opts: { name?: string; force?: boolean; onProgress?: (msg: string) => void } = {},
): Promise<BaseImageResult> {
  const name = opts.name ?? DEFAULT_BASE_IMAGE;
  const started = Date.now();
  const py = await findPython();
  const want = { 'jupiter.base.node': process.version, 'jupiter.base.python': py?.version ?? 'none', 'jupiter.base.format': BASE_FORMAT };
  const labels = await imageLabels(docker, name);
  if (!opts.force && labels && Object.entries(want).every(([k, v]) => labels[k] === v)) {
    return { name, node: want['jupiter.base.node'], python: want['jupiter.base.python'], created: false, bytes: 0, seconds: 0 };
  }
  const info = (await docker.info()) as { Architecture?: string };
  if (info.Architecture && info.Architecture !== dockerArch()) {
    throw inputError(`cannot create ${name} on an ${info.Architecture} engine from this ${dockerArch()} machine's binaries`, {
      hint: 'set docker.baseImage in jupiter.config.json to an image with node 20 and python3 for that architecture (e.g. node:20-slim plus python3)',
    });
  }
  opts.onProgress?.(`creating base image ${name} (node ${want['jupiter.base.node']}, python ${want['jupiter.base.python']}) from this machine's files`);
  const rootfs = await baseRootfs();
  const bytes = rootfs.entries.reduce((s, e) => s + (e.size ?? e.data?.length ?? 0), 0);
  const colon = name.lastIndexOf(':');
  const [repo, tag] = colon > name.lastIndexOf('/') ? [name.slice(0, colon), name.slice(colon + 1)] : [name, 'latest'];
  const labelChange = `LABEL ${Object.entries(want).map(([k, v]) => `${k}=${v}`).join(' ')}`;
  const stream = await docker.importImage(tarStream(rootfs.entries), {
    repo, tag,
    changes: [labelChange, `ENV PATH=${BASE_PATH}`, `USER ${RUNNER_UID}:${RUNNER_UID}`, 'WORKDIR /jupiter/work', 'CMD ["node"]'],
  } as object);
  await followProgress(docker, stream, () => undefined);
  return {
    name, node: want['jupiter.base.node'], python: want['jupiter.base.python'], created: true, bytes,
    seconds: (Date.now() - started) / 1000,
  };
}
