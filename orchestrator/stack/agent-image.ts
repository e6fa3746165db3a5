// The node agent's image, built through the engine's API like the runners' app images
// (circe/runtime/docker-image.ts), in two cached layers on the same base:
//   jupiter/deps:<hash>   = base + the production packages the agent's code imports (with theirs);
//   jupiter/agent:<hash>  = deps + /jupiter/dist (the compiled CLI: config, circe, mappers,
//                           profilers, orchestrator) + /jupiter/apps (this checkout's apps).
// Why the apps: the execution profiler runs an app's tasks on their sample inputs; the deploying
// machine names the app folder by its own path, which does not exist inside the container, so
// the agent falls back to looking the app up by name under /jupiter/apps (config/app/load.ts).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { inputError, runtimeError } from '../../config/errors.js';
import type { TarEntry } from '../../circe/runtime/docker-tar.js';
import { DEFAULT_BASE_IMAGE, RUNNER_UID, ensureBaseImage } from '../../circe/runtime/docker-base.js';
import {
  APP_SKIP, DIST_EXT, IMAGE_FORMAT, LABEL_IMAGE_HASH, LABEL_IMAGE_KIND, build, defaultSources, dependencyEntries,
  imageExists, importedPackages, productionPackages, shortHash, walk as walkFiles, type ImageSources,
} from '../../circe/runtime/docker-image.js';

export const AGENT_REPOSITORY = 'jupiter/agent';
export const AGENT_CLI = '/jupiter/dist/orchestrator/cli/main.js';
/** Compiled folders the agent's CLI loads (test/ and bench/ stay out). */
const AGENT_DIST = ['config', 'circe', 'mappers', 'profilers', 'orchestrator'];

export interface AgentImage {
  tag: string;
  /** Layers built now (empty when everything was cached on the engine). */
  built: string[];
}

/** Every file of the agent layer, read into memory (to hash it). */
export function agentImageEntries(sources: ImageSources): TarEntry[] {
  const pkg = JSON.parse(readFileSync(join(sources.root, 'package.json'), 'utf8')) as { version?: string };
  // The CLI reads its version from /jupiter/package.json; config/app/load.ts finds /jupiter/apps next to it.
  const entries: TarEntry[] = [{
    name: 'jupiter/package.json', type: 'file', mode: 0o644,
    data: Buffer.from(`${JSON.stringify({ name: 'jupiter-agent', version: pkg.version ?? '0.0.0', private: true, type: 'module' })}\n`),
  }];
  for (const f of AGENT_DIST) {
    const dir = join(sources.distDir, f);
    if (!existsSync(dir)) throw runtimeError(`${dir} is missing`, { hint: 'build the project first: npm run build' });
    walkFiles(dir, `jupiter/dist/${f}`, entries, (rel, isDir) => isDir || DIST_EXT.test(rel));
    // Assets tsc does not emit (py_worker.py, JSON schemas, dashboard files) sit next to the sources.
    const src = join(sources.root, f);
    if (existsSync(src)) walkFiles(src, `jupiter/dist/${f}`, entries, (rel, isDir) => isDir || !/\.(ts|md)$/.test(rel));
  }
  const apps = join(sources.root, 'apps');
  if (existsSync(apps)) walkFiles(apps, 'jupiter/apps', entries, (rel) => !APP_SKIP.has(rel.slice(rel.lastIndexOf('/') + 1)));
  const names = new Set<string>();
  const unique = entries.filter((e) => !names.has(e.name) && names.add(e.name));
  for (const e of unique) {
    if (e.source) {
      e.data = readFileSync(e.source);
      e.source = undefined;
    }
  }
  return unique;
}

/**
 * Make sure the agent image exists on this engine; returns its tag. The default base image is
 * created from this machine's node and python3 when missing (as for runners).
 */
export async function ensureAgentImage(
  docker: Docker,
  baseImage: string,
  onProgress: (msg: string) => void = () => undefined,
  sources: ImageSources = defaultSources(),
  entries: TarEntry[] = agentImageEntries(sources),
): Promise<AgentImage> {
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
  const h = createHash('sha256').update(`${IMAGE_FORMAT}\nagent\n${depsTag}\n`);
  for (const e of entries) h.update(`${e.name}\0${e.mode}\0${e.data?.length ?? 0}\0`).update(e.data ?? Buffer.alloc(0));
  const hash = shortHash(h);
  const tag = `${AGENT_REPOSITORY}:${hash}`;
  const found = await imageExists(docker, tag);
  if (!found || found.Config?.Labels?.[LABEL_IMAGE_HASH] !== hash) {
    onProgress(`building ${tag} (${entries.length} files)`);
    const dockerfile = [
      `FROM ${depsTag}`,
      'COPY jupiter /jupiter',
      `USER ${RUNNER_UID}:${RUNNER_UID}`,
      'WORKDIR /jupiter/work',
      'ENV NODE_ENV=production HOME=/jupiter/work',
      `ENTRYPOINT ["node", "${AGENT_CLI}"]`,
      'CMD ["agent", "--help"]',
      '',
    ].join('\n');
    await build(docker, tag, dockerfile, entries, { [LABEL_IMAGE_KIND]: 'agent', [LABEL_IMAGE_HASH]: hash }, onProgress);
    built.push(tag);
  }
  return { tag, built };
}
