// Start a Jupiter process that outlives the CLI (embedded Redis companions, agents, the hub),
// with its output in <stateDir>/logs/<name>.log.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withMallocEnv } from '../../circe/runtime/malloc-env.js';

/** Absolute path of bin/jupiter.js in this checkout/installation. */
export const jupiterBin = fileURLToPath(new URL('../../../bin/jupiter.js', import.meta.url));

export function logFile(dir: string, name: string): string {
  const logs = join(resolve(dir), 'logs');
  mkdirSync(logs, { recursive: true });
  return join(logs, `${name}.log`);
}

export function spawnDetached(dir: string, name: string, args: string[], env: NodeJS.ProcessEnv = {}): number {
  const fd = openSync(logFile(dir, name), 'a');
  const child = spawn(process.execPath, [jupiterBin, ...args], {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: withMallocEnv({ ...process.env, ...env }),
  });
  closeSync(fd);
  child.unref();
  if (!child.pid) throw new Error(`could not start ${name}`);
  return child.pid;
}
