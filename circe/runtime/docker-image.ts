// The app image, built through the engine's API (no registry needed), in two cached layers:
//   jupiter/deps:<hash>       = base image + /jupiter/node_modules (production dependencies only);
//                               hash of the base image id and the installed package list, so it is
//                               rebuilt only when dependencies change.
//   jupiter/app-<app>:<hash>  = deps + /jupiter/dist (compiled config/ and circe/, all a runner
//                               imports) + /jupiter/apps/<app> (the app folder: loadApp names an app
//                               after its folder, so the folder keeps the app's name); hash of the contents;
//                               an original Jupiter app also gets its scripts/ at /centralized_scheduler.
// An image whose tag (content hash) already exists on the engine is reused as is.
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import type { AppSpec } from '../../config/types.js';
import { inputError, runtimeError } from '../../config/errors.js';
import { tarStream, withParents, type TarEntry } from './docker-tar.js';
import { followProgress } from './docker-progress.js';
import { DEFAULT_BASE_IMAGE, RUNNER_UID, ensureBaseImage } from './docker-base.js';
import { CENTRALIZED, CENTRALIZED_ENV, usesCentralized } from '../compat/centralized.js';

/** Bumped when the layout of the app/deps images changes. */
export const IMAGE_FORMAT = '1';
export const LABEL_IMAGE_APP = 'jupiter.image.app';
export const LABEL_IMAGE_HASH = 'jupiter.image.hash';
export const LABEL_IMAGE_KIND = 'jupiter.image.kind';
/** Folders of dist/ a runner needs (circe/ depends on config/ only: lint-enforced). */
const DIST_FOLDERS = ['config', 'circe'];
export const DIST_EXT = /\.(js|mjs|cjs|json)$/;
/** The engine-side code itself: runners never drive Docker (and it would pull dockerode in). */
export const NOT_IN_IMAGE = /\/circe\/runtime\/docker[^/]*\.js$/;
/** Files of dependencies a runner never reads. */
const DEPS_SKIP = /(\.d\.[cm]?ts|\.map|\.md|\.markdown|\.ts)$/i;
export const APP_SKIP = new Set(['node_modules', '__pycache__', '.git', '.venv']);

export interface ImageSources {
  /** Project root (holds package.json and node_modules). */
  root: string;
  /** Compiled project (tsc outDir). */
  distDir: string;
}

/** Root and dist of the checkout this module runs from (dist/circe/runtime/docker-image.js). */
export function defaultSources(): ImageSources {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return { root: dir, distDir: join(dir, 'dist') };
}

function fileMode(mode: number): number {
  return mode & 0o111 ? 0o755 : 0o644;
}

/** Files below dir as tar entries under `prefix`; symlinks to files are copied as files. */
export function walk(dir: string, prefix: string, out: TarEntry[], keep: (rel: string, isDir: boolean) => boolean): void {
  for (const name of readdirSync(dir).sort()) {
    const full = join(dir, name);
    const rel = `${prefix}/${name}`;
    let st = lstatSync(full);
    if (st.isSymbolicLink()) {
      if (!existsSync(full)) continue;
      st = statSync(realpathSync(full));
    }
    if (st.isDirectory()) {
      if (!keep(rel, true)) continue;
      // The folder itself too: an empty one (an app's empty sample_input/) must exist in the image.
      out.push({ name: rel, type: 'directory', mode: 0o755 });
      walk(full, rel, out, keep);
    } else if (st.isFile() && keep(rel, false)) {
      out.push({ name: rel, type: 'file', mode: fileMode(st.mode), source: full, size: st.size });
    }
  }
}

interface LockPackage {
  version?: string; resolved?: string; integrity?: string; dev?: boolean; devOptional?: boolean; link?: boolean;
  dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; peerDependencies?: Record<string, string>;
}

/** Package names imported (import/require/import()) by JavaScript sources. */
export function importedPackages(sources: Array<{ name: string; data?: Buffer }>): string[] {
  const found = new Set<string>();
  const spec = /(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;
  for (const f of sources) {
    if (!f.data || !/\.(c|m)?(j|t)s$/.test(f.name)) continue;
    for (const m of f.data.toString('utf8').matchAll(spec)) {
      const id = m[1] as string;
      if (id.startsWith('.') || id.startsWith('/') || id.startsWith('node:') || isBuiltin(id)) continue;
      const parts = id.split('/');
      found.add(id.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string));
    }
  }
  return [...found].sort();
}

/** Node's lookup: the package `name` as seen from the package installed at `from`. */
function resolveIn(packages: Record<string, LockPackage>, from: string, name: string): string | undefined {
  let dir = from;
  for (;;) {
    const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
    if (packages[candidate]) return candidate;
    if (!dir) return undefined;
    const cut = dir.lastIndexOf('/node_modules/');
    dir = cut >= 0 ? dir.slice(0, cut) : '';
  }
}

/**
 * Installed production packages (paths relative to root, e.g. node_modules/a/node_modules/b):
 * with `roots`, only those packages and what they depend on (what the runner can load).
 */
export function productionPackages(root: string, roots?: string[]): Array<{ path: string; id: string }> {
  const hidden = join(root, 'node_modules', '.package-lock.json');
  if (existsSync(hidden)) {
    const lock = JSON.parse(readFileSync(hidden, 'utf8')) as { packages: Record<string, LockPackage> };
    const pk = lock.packages;
    let chosen = Object.keys(pk).filter((p) => p.startsWith('node_modules/') && !pk[p]?.dev && !pk[p]?.devOptional && !pk[p]?.link);
    if (roots) {
      const keep = new Set<string>();
      const todo = roots.map((r) => resolveIn(pk, '', r)).filter((p): p is string => !!p);
      while (todo.length) {
        const p = todo.pop() as string;
        if (keep.has(p)) continue;
        keep.add(p);
        const v = pk[p] ?? {};
        for (const dep of Object.keys({ ...v.dependencies, ...v.optionalDependencies, ...v.peerDependencies })) {
          const at = resolveIn(pk, p, dep);
          if (at) todo.push(at);
        }
      }
      chosen = chosen.filter((p) => keep.has(p));
    }
    return chosen.filter((p) => existsSync(join(root, p)))
      .map((p) => ({ path: p, id: `${p}@${pk[p]?.version ?? ''}#${pk[p]?.integrity ?? pk[p]?.resolved ?? ''}` }))
      .sort((a, b) => a.path.localeCompare(b.path));
  }
  // No hidden lockfile (older npm): every production package, as npm lists them.
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  return out.split('\n').filter((l) => l && l !== root).map((abs) => {
    const path = relative(root, abs).split(sep).join('/');
    const pkg = JSON.parse(readFileSync(join(abs, 'package.json'), 'utf8')) as { version?: string };
    return { path, id: `${path}@${pkg.version ?? ''}` };
  }).sort((a, b) => a.path.localeCompare(b.path));
}

export function dependencyEntries(root: string, packages: Array<{ path: string }>): TarEntry[] {
  const out: TarEntry[] = [];
  for (const { path } of packages) {
    // Nested node_modules folders are packages of their own in the list.
    walk(join(root, path), path, out, (rel, isDir) => (isDir ? !rel.endsWith('/node_modules') : !DEPS_SKIP.test(rel)));
  }
  return out;
}

export async function imageExists(docker: Docker, name: string): Promise<{ Id: string; Config?: { Labels?: Record<string, string> } } | undefined> {
  try {
    return (await docker.getImage(name).inspect()) as { Id: string; Config?: { Labels?: Record<string, string> } };
  } catch (e) {
    if ((e as { statusCode?: number }).statusCode === 404) return undefined;
    throw runtimeError(`Docker engine: ${(e as Error).message}`, {}, e);
  }
}

export async function build(
  docker: Docker, tag: string, dockerfile: string, entries: TarEntry[], labels: Record<string, string>,
  onProgress: (msg: string) => void,
): Promise<void> {
  const context = tarStream(withParents([{ name: 'Dockerfile', type: 'file', mode: 0o644, data: Buffer.from(dockerfile) }, ...entries]));
  const stream = await docker.buildImage(context, { t: tag, labels, rm: true, forcerm: true });
  await followProgress(docker, stream, (line) => {
    if (/^Step \d+\/\d+/.test(line) || /^Successfully/.test(line)) onProgress(`${tag}: ${line}`);
  });
}

/** Short content hash used in tags. */
export function shortHash(h: ReturnType<typeof createHash>): string {
  return h.digest('hex').slice(0, 16);
}

/** Where the app folder is inside the image. */
export function containerAppDir(app: string): string {
  return `/jupiter/apps/${app}`;
}

/** Docker repository names are lowercase [a-z0-9._-]. */
export function appRepository(app: string): string {
  return `jupiter/app-${app.toLowerCase().replace(/[^a-z0-9._-]/g, '-')}`;
}

export interface AppImage {
  tag: string;
  /** Which layers were built now (empty when everything was cached). */
  built: string[];
}

/**
 * Make sure the app image exists on this engine; returns its tag.
 * The default base image is created from this machine's files when missing.
 */
export async function ensureAppImage(
  docker: Docker,
  app: AppSpec,
  baseImage: string,
  onProgress: (msg: string) => void = () => undefined,
  sources: ImageSources = defaultSources(),
): Promise<AppImage> {
  const built: string[] = [];
  if (baseImage === DEFAULT_BASE_IMAGE) {
    const r = await ensureBaseImage(docker, { name: baseImage, onProgress });
    if (r.created) built.push(baseImage);
  }
  const base = await imageExists(docker, baseImage);
  if (!base) {
    throw inputError(`the base image ${baseImage} is not on the Docker engine`, {
      hint: `pull it there (docker pull ${baseImage}), or leave docker.baseImage at ${DEFAULT_BASE_IMAGE}, which Jupiter creates itself`,
    });
  }

  // The runner code and the app folder, read into memory to hash them.
  const entries: TarEntry[] = [{
    name: 'jupiter/package.json', type: 'file', mode: 0o644,
    data: Buffer.from('{ "name": "jupiter-runner", "private": true, "type": "module" }\n'),
  }];
  for (const f of DIST_FOLDERS) {
    const dir = join(sources.distDir, f);
    if (!existsSync(dir)) throw runtimeError(`${dir} is missing`, { hint: 'build the project first: npm run build' });
    walk(dir, `jupiter/dist/${f}`, entries, (rel, isDir) => isDir || (DIST_EXT.test(rel) && !NOT_IN_IMAGE.test(rel)));
    // Assets tsc does not emit (e.g. circe/invoke/py_worker.py) are looked up next to the JS.
    const src = join(sources.root, f);
    if (existsSync(src)) walk(src, `jupiter/dist/${f}`, entries, (rel, isDir) => isDir || !/\.(ts|md)$/.test(rel));
  }
  walk(app.dir, `jupiter/apps/${app.name}`, entries, (rel) => !APP_SKIP.has(rel.slice(rel.lastIndexOf('/') + 1)));
  // Original Jupiter apps open their files at /centralized_scheduler/: a copy of scripts/ lives
  // there, shell scripts executable (the original ran them by path).
  const centralized = usesCentralized(app);
  if (centralized) {
    const at = CENTRALIZED.slice(1);
    const from = entries.length;
    walk(join(app.dir, 'scripts'), at, entries, (rel) => !APP_SKIP.has(rel.slice(rel.lastIndexOf('/') + 1)));
    for (const e of entries.slice(from)) if (e.name.endsWith('.sh')) e.mode = 0o755;
    entries.push({ name: `${at}/input`, type: 'directory', mode: 0o755 }, { name: `${at}/output`, type: 'directory', mode: 0o755 });
  }
  const names = new Set<string>();
  const unique = entries.filter((e) => !names.has(e.name) && names.add(e.name));
  entries.length = 0;
  entries.push(...unique);
  for (const e of entries) {
    if (e.source) {
      e.data = readFileSync(e.source);
      e.source = undefined;
    }
  }

  // Layer 1: the production packages that runner code and app scripts import, with their dependencies.
  const packages = productionPackages(sources.root, importedPackages(entries));
  const depsHash = createHash('sha256').update(`${IMAGE_FORMAT}\n${base.Id}\n`);
  for (const p of packages) depsHash.update(`${p.id}\n`);
  const depsTag = `jupiter/deps:${shortHash(depsHash)}`;
  if (!(await imageExists(docker, depsTag))) {
    onProgress(`building ${depsTag} (${packages.length} production packages)`);
    await build(docker, depsTag, `FROM ${baseImage}\nCOPY node_modules /jupiter/node_modules\n`,
      dependencyEntries(sources.root, packages), { [LABEL_IMAGE_KIND]: 'deps' }, onProgress);
    built.push(depsTag);
  }

  // Layer 2: runner code and app.
  const appHash = createHash('sha256').update(`${IMAGE_FORMAT}\n${depsTag}\n`);
  for (const e of entries) {
    appHash.update(`${e.name}\0${e.mode}\0${e.data?.length ?? 0}\0`).update(e.data ?? Buffer.alloc(0));
  }
  const hash = shortHash(appHash);
  const tag = `${appRepository(app.name)}:${hash}`;
  const found = await imageExists(docker, tag);
  if (!found || found.Config?.Labels?.[LABEL_IMAGE_HASH] !== hash) {
    onProgress(`building ${tag} (${entries.length} files)`);
    const dockerfile = [
      `FROM ${depsTag}`,
      'COPY jupiter /jupiter',
      ...(centralized ? [`COPY ${CENTRALIZED.slice(1)} ${CENTRALIZED}`, `ENV ${CENTRALIZED_ENV}=image`] : []),
      `USER ${RUNNER_UID}:${RUNNER_UID}`,
      'WORKDIR /jupiter/work',
      `ENV NODE_ENV=production HOME=/jupiter/work JUPITER_APP=${app.name} JUPITER_APP_DIR=${containerAppDir(app.name)}`,
      'CMD ["node", "/jupiter/dist/circe/runner/main.js"]',
      '',
    ].join('\n');
    await build(docker, tag, dockerfile, entries,
      { [LABEL_IMAGE_KIND]: 'app', [LABEL_IMAGE_APP]: app.name, [LABEL_IMAGE_HASH]: hash }, onProgress);
    built.push(tag);
  }
  return { tag, built };
}
