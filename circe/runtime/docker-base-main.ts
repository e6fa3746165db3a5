// `node dist/circe/runtime/docker-base-main.js [--host unix:///var/run/docker.sock] [--name jupiter/base:local] [--force]`
// Creates the registry-free base image on one engine (used by scripts/docker-base-image.sh).
import { parseArgs } from 'node:util';
import { isJupiterError } from '../../config/errors.js';
import { DEFAULT_BASE_IMAGE, ensureBaseImage } from './docker-base.js';
import { DEFAULT_SOCKET, dockerClient, endpointKey, parseDockerHost } from './docker-engine.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      host: { type: 'string' },
      name: { type: 'string', default: DEFAULT_BASE_IMAGE },
      force: { type: 'boolean', default: false },
    },
  });
  const hostText = values.host ?? process.env.DOCKER_HOST ?? `unix://${DEFAULT_SOCKET}`;
  const endpoint = parseDockerHost(hostText);
  if (!endpoint) {
    process.stderr.write(`--host ${hostText}: expected unix:///path, tcp://host:port or ssh://user@host\n`);
    process.exit(2);
  }
  const r = await ensureBaseImage(dockerClient(endpoint), {
    name: values.name, force: values.force, onProgress: (m) => process.stderr.write(`${m}\n`),
  });
  const what = r.created ? `created in ${r.seconds.toFixed(1)} s (${(r.bytes / 1e6).toFixed(0)} MB of files)` : 'already present';
  process.stdout.write(`${r.name} on ${endpointKey(endpoint)}: ${what}; node ${r.node}, python ${r.python}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${isJupiterError(e) ? e.format() : (e as Error).message}\n`);
  process.exit(isJupiterError(e) ? e.exitCode : 1);
});
