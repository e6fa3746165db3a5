// Which Docker engine "this machine" means, the way the docker CLI decides it: DOCKER_HOST, else
// the Docker context (DOCKER_CONTEXT, else currentContext of ~/.docker/config.json), else the
// default socket. Local nodes without a "docker" entry use it, so a user whose `docker ps` works
// gets the same engine in Jupiter.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface LocalDockerHost {
  /** The endpoint in DOCKER_HOST form: unix:///…, tcp://…, ssh://…. */
  url: string;
  /** Where it came from, for messages: "DOCKER_HOST" or "Docker context <name>". */
  from: string;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return undefined;
  }
}

/** The engine named by the environment or the current Docker context; undefined means the default socket. */
export function localDockerHost(env: NodeJS.ProcessEnv = process.env): LocalDockerHost | undefined {
  if (env.DOCKER_HOST) return { url: env.DOCKER_HOST, from: 'DOCKER_HOST' };
  const configDir = env.DOCKER_CONFIG ?? join(env.HOME ?? homedir(), '.docker');
  const config = readJson(join(configDir, 'config.json')) as { currentContext?: string } | undefined;
  const name = env.DOCKER_CONTEXT ?? config?.currentContext;
  if (!name || name === 'default') return undefined;
  // The docker CLI stores a context's metadata under the SHA-256 of its name.
  const id = createHash('sha256').update(name).digest('hex');
  const meta = readJson(join(configDir, 'contexts', 'meta', id, 'meta.json')) as { Endpoints?: { docker?: { Host?: string } } } | undefined;
  const host = meta?.Endpoints?.docker?.Host;
  return host ? { url: host, from: `Docker context ${name}` } : undefined;
}
