// The docker runtime: one container per task on the Docker engine of the task's mapped node.
// Images are built through each engine's API (see docker-image.ts), so remote engines and machines
// without a registry work. Containers are found again by their labels (jupiter.app/task/node/run).
import type Docker from 'dockerode';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { inputError, isJupiterError, runtimeError } from '../../config/errors.js';
import type { RunnerHandle, RunnerSpec, Runtime, StartOptions, TeardownReport } from './types.js';
import { clusterEngines, isLocalEndpoint, nodeEngine, type Engine } from './docker-engine.js';
import { defaultSources, ensureAppImage, LABEL_IMAGE_APP, type ImageSources } from './docker-image.js';
import {
  LABEL_APP, LABEL_NODE, LABEL_RUN, LABEL_TASK, containerName, containerOptions, isLoopbackUrl,
  type ContainerOverrides,
} from './docker-container.js';
import { maskSecrets } from './docker-progress.js';

export interface DockerRuntimeOptions {
  /** teardown also removes the app's images (the shared base and deps images stay). */
  removeImages?: boolean;
  /** Where the compiled project and node_modules are (default: this checkout). */
  sources?: ImageSources;
  /** Environment for DOCKER_HOST (nodes without a docker endpoint). */
  env?: NodeJS.ProcessEnv;
  /** Replace the runner command (tests of the sandbox itself). */
  overrides?: ContainerOverrides;
}

export interface DockerTeardownReport extends TeardownReport {
  /** Engines that could not be reached: their containers (if any) are still there. */
  failed: string[];
}

function engineName(e: Engine): string {
  return `${e.nodes.join(',')} (${e.key})`;
}

/** Any engine failure becomes a runtime error naming the node and endpoint (never a password). */
function engineError(e: Engine, err: unknown, doing: string): Error {
  if (isJupiterError(err)) return err;
  const msg = maskSecrets((err as Error).message ?? String(err));
  return runtimeError(`Docker engine of node ${engineName(e)}: ${doing} failed: ${msg}`, {
    hint: 'is dockerd running there? The endpoint comes from nodes[].docker in the cluster configuration; nodes on this machine without one use DOCKER_HOST, else the current Docker context, else unix:///var/run/docker.sock (or the private engine of the embedded stack)',
  }, err);
}

function notFound(err: unknown): boolean {
  return (err as { statusCode?: number }).statusCode === 404;
}

/** Docker's multiplexed log format: 8-byte headers (stream, 0, 0, 0, size) before each chunk. */
export function demuxLogs(buf: Buffer): { stdout: string; stderr: string; combined: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const all: Buffer[] = [];
  let o = 0;
  while (o + 8 <= buf.length) {
    const kind = buf[o];
    const size = buf.readUInt32BE(o + 4);
    const chunk = buf.subarray(o + 8, o + 8 + size);
    (kind === 2 ? err : out).push(chunk);
    all.push(chunk);
    o += 8 + size;
  }
  if (o === 0 && buf.length > 0) return { stdout: buf.toString(), stderr: '', combined: buf.toString() };
  return { stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), combined: Buffer.concat(all).toString() };
}

interface Listed { engine: Engine; info: Docker.ContainerInfo }

export class DockerRuntime implements Runtime {
  readonly name = 'docker' as const;
  private readonly opts: DockerRuntimeOptions;
  /** engine key + app -> app image tag being or already built. */
  private readonly images = new Map<string, Promise<string>>();

  constructor(opts: DockerRuntimeOptions = {}) {
    this.opts = opts;
  }

  private get sources(): ImageSources {
    return this.opts.sources ?? defaultSources();
  }

  private image(engine: Engine, app: AppSpec, cluster: ClusterConfig, onProgress?: (msg: string) => void): Promise<string> {
    const key = `${engine.key}|${app.name}`;
    let p = this.images.get(key);
    if (!p) {
      p = ensureAppImage(engine.docker, app, cluster.docker.baseImage, (m) => onProgress?.(`${engine.nodes.join(',')}: ${m}`), this.sources)
        .then((r) => r.tag)
        .catch((err: unknown) => {
          this.images.delete(key);
          throw engineError(engine, err, 'building the app image');
        });
      this.images.set(key, p);
    }
    return p;
  }

  async prepare(app: AppSpec, cluster: ClusterConfig, onProgress?: (msg: string) => void): Promise<void> {
    // A fresh prepare re-checks the images (the app folder may have changed).
    for (const k of [...this.images.keys()]) if (k.endsWith(`|${app.name}`)) this.images.delete(k);
    await Promise.all(clusterEngines(cluster, this.opts.env).map((e) => this.image(e, app, cluster, onProgress)));
  }

  private async listed(engines: Engine[], labels: string[], all: boolean, failed?: string[]): Promise<Listed[]> {
    const lists = await Promise.all(engines.map(async (engine) => {
      try {
        const infos = await engine.docker.listContainers({ all, filters: { label: labels } });
        return infos.map((info) => ({ engine, info }));
      } catch (err) {
        if (!failed) throw engineError(engine, err, 'listing containers');
        failed.push(`engine of node ${engineName(engine)} not reachable: ${maskSecrets((err as Error).message)}`);
        return [];
      }
    }));
    return lists.flat();
  }

  async start(app: AppSpec, specs: RunnerSpec[], cluster: ClusterConfig, startOpts: StartOptions = {}): Promise<RunnerHandle[]> {
    const targets = specs.map((spec) => {
      if (spec.app !== app.name) throw inputError(`runner spec for app ${spec.app} given to start ${app.name}`);
      const engine = nodeEngine(cluster, spec.node, this.opts.env);
      if (!isLocalEndpoint(engine.endpoint) && isLoopbackUrl(spec.redisUrl)) {
        throw inputError(`node ${spec.node} runs on a remote Docker engine (${engine.key}) but the Redis URL points at this machine's loopback`, {
          file: cluster.source,
          hint: 'set redisUrl (or JUPITER_REDIS_URL) to an address every node can reach, with a password',
        });
      }
      return { spec, engine };
    });

    // A task remapped to another node: its old container elsewhere goes once the new one runs
    // (best effort: a lost node's engine may be unreachable). New first: the old runner, given a
    // grace on a live move, serves what it stored until taken, and its receivers may be among the
    // very runners started here (a repair moves a whole chain at once); stopped first, it waited
    // out its grace for receivers that started only after it, and they then had to have its
    // outputs made again. Meanwhile both take the task's items, which the done markers make
    // harmless.
    const taskEngine = new Map(targets.map((t) => [t.spec.task, t.engine.key]));
    const stale = (await this.listed(clusterEngines(cluster, this.opts.env), [`${LABEL_APP}=${app.name}`], true, []))
      .filter((l) => {
        const task = l.info.Labels[LABEL_TASK] ?? '';
        return taskEngine.has(task) && taskEngine.get(task) !== l.engine.key;
      });

    const started = await Promise.all(targets.map(async ({ spec, engine }) => {
      const image = await this.image(engine, app, cluster);
      try {
        return await this.ensureContainer(engine, app, spec, image, cluster);
      } catch (err) {
        throw engineError(engine, err, `starting the container of task ${spec.task}`);
      }
    }));
    await Promise.all(stale.map(async (l) => {
      const c = l.engine.docker.getContainer(l.info.Id);
      // A live move: SIGTERM, so the runner finishes its item and hands over what it stored.
      if (startOpts.moveGraceSec !== undefined) await c.stop({ t: startOpts.moveGraceSec }).catch(() => undefined);
      await c.remove({ force: true }).catch(() => undefined);
    }));
    return started;
  }

  private async ensureContainer(engine: Engine, app: AppSpec, spec: RunnerSpec, image: string, cluster: ClusterConfig): Promise<RunnerHandle> {
    const existing = engine.docker.getContainer(containerName(spec.app, spec.task));
    let info: Docker.ContainerInspectInfo | undefined;
    try {
      info = await existing.inspect();
    } catch (err) {
      if (!notFound(err)) throw err;
    }
    if (info) {
      const l = info.Config.Labels ?? {};
      const same = l[LABEL_RUN] === spec.runId && l[LABEL_NODE] === spec.node && info.Config.Image === image;
      if (same && (info.State.Running || info.State.Restarting)) return { task: spec.task, node: spec.node, id: info.Id };
      await existing.remove({ force: true });
    }
    const helper = app.tasks.find((t) => t.name === spec.task)?.isDag === false;
    const opts = containerOptions(spec, image, cluster.docker, { ...this.opts.overrides, helper });
    const container = await engine.docker.createContainer(opts).catch((err: unknown) => {
      if (cluster.docker.network === 'bridge' && /network .*not found/i.test((err as Error).message)) {
        throw inputError(`the Docker engine of node ${spec.node} has no bridge network`, {
          file: cluster.source, hint: 'use docker.network "host", or start that dockerd with a bridge',
        });
      }
      throw err;
    });
    await container.start();
    return { task: spec.task, node: spec.node, id: container.id };
  }

  async list(app: string, cluster: ClusterConfig): Promise<RunnerHandle[]> {
    const found = await this.listed(clusterEngines(cluster, this.opts.env), [`${LABEL_APP}=${app}`], true, []);
    return found
      .filter((l) => l.info.State === 'running' || l.info.State === 'restarting')
      .map((l) => ({ task: l.info.Labels[LABEL_TASK] ?? '', node: l.info.Labels[LABEL_NODE] ?? '', id: l.info.Id }));
  }

  async teardown(app: string, cluster: ClusterConfig): Promise<DockerTeardownReport> {
    const failed: string[] = [];
    const engines = clusterEngines(cluster, this.opts.env);
    const found = await this.listed(engines, [`${LABEL_APP}=${app}`], true, failed);
    const removed: string[] = [];
    await Promise.all(found.map(async ({ engine, info }) => {
      const name = info.Names[0]?.replace(/^\//, '') ?? info.Id.slice(0, 12);
      try {
        await engine.docker.getContainer(info.Id).remove({ force: true });
        removed.push(`container ${name} (task ${info.Labels[LABEL_TASK]}, node ${info.Labels[LABEL_NODE]}) on ${engine.key}`);
      } catch (err) {
        if (!notFound(err)) failed.push(`container ${name} on ${engine.key}: ${maskSecrets((err as Error).message)}`);
      }
    }));
    // The nodes' data volumes (direct data path), once no container uses them.
    await Promise.all(engines.map(async (engine) => {
      try {
        const { Volumes } = await engine.docker.listVolumes({ filters: { label: [`${LABEL_APP}=${app}`] } });
        for (const v of Volumes ?? []) {
          await engine.docker.getVolume(v.Name).remove({ force: true });
          removed.push(`volume ${v.Name} (node ${v.Labels?.[LABEL_NODE] ?? '?'}) on ${engine.key}`);
        }
      } catch (err) {
        if (!failed.some((f) => f.includes(engine.key))) failed.push(`volumes on ${engine.key}: ${maskSecrets((err as Error).message)}`);
      }
    }));
    if (this.opts.removeImages) {
      await Promise.all(engines.map(async (engine) => {
        try {
          const images = await engine.docker.listImages({ filters: { label: [`${LABEL_IMAGE_APP}=${app}`] } });
          for (const img of images) {
            await engine.docker.getImage(img.Id).remove({ force: true });
            removed.push(`image ${(img.RepoTags ?? [img.Id]).join(', ')} on ${engine.key}`);
          }
        } catch (err) {
          if (!failed.some((f) => f.includes(engine.key))) failed.push(`images on ${engine.key}: ${maskSecrets((err as Error).message)}`);
        }
      }));
    }
    for (const k of [...this.images.keys()]) if (k.endsWith(`|${app}`)) this.images.delete(k);
    removed.sort();
    return { removed, failed };
  }

  async logs(app: string, task: string, cluster: ClusterConfig, tail = 100): Promise<string> {
    const found = await this.listed(clusterEngines(cluster, this.opts.env), [`${LABEL_APP}=${app}`, `${LABEL_TASK}=${task}`], true, []);
    const pick = found.find((l) => l.info.State === 'running') ?? found[0];
    if (!pick) {
      throw inputError(`no container of task ${task} of app ${app} on any Docker engine`, { hint: `is ${app} deployed? see \`jupiter status ${app}\`` });
    }
    try {
      const buf = (await pick.engine.docker.getContainer(pick.info.Id).logs({ stdout: true, stderr: true, tail, follow: false })) as unknown as Buffer;
      return maskSecrets(demuxLogs(buf).combined);
    } catch (err) {
      throw engineError(pick.engine, err, `reading the logs of task ${task}`);
    }
  }
}

/** The docker runtime (what `--runtime docker` selects). */
export function createDockerRuntime(opts: DockerRuntimeOptions = {}): DockerRuntime {
  return new DockerRuntime(opts);
}
