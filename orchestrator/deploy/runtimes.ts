// The runtime for a deployment's task runners. The home's sink always runs as a local process
// (its outputs land on this machine under runs/), whatever runtime the tasks use.
import type { RuntimeName } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import { ProcessRuntime } from '../../circe/runtime/process.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import type { Runtime } from '../../circe/runtime/types.js';

export const RUNTIMES: RuntimeName[] = ['process', 'docker'];

export function runtimeFor(name: string): Runtime {
  if (name === 'process') return new ProcessRuntime();
  if (name === 'docker') return new DockerRuntime();
  throw inputError(`unknown runtime ${JSON.stringify(name)}`, { hint: `one of: ${RUNTIMES.join(', ')}` });
}

export function homeRuntime(): Runtime {
  return new ProcessRuntime();
}
