// The embedded stack's state file (<stateDir>/stack.json): which private services run, where.
import { mkdirSync, readFileSync, writeFileSync, renameSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { isAlive, isAliveSince } from '../../circe/runtime/pid.js';

export interface ServiceState {
  pid: number;
  startedAt: number;
}

export interface StackState {
  redis?: ServiceState & { url: string; port: number };
  /** mqttUsername/mqttPassword: the login of the embedded broker (generated at start; this file is 0600). */
  hub?: ServiceState & { mqttUrl: string; mqttWsUrl: string; httpUrl: string; mqttUsername?: string; mqttPassword?: string };
  agents?: Record<string, ServiceState & { listen: string }>;
  /** The private Docker engine (docker runtime with no engine reachable: see dockerd.ts). */
  dockerd?: ServiceState & { socket: string; execRoot: string };
}

export function stateDir(dir: string): string {
  const abs = resolve(dir);
  mkdirSync(abs, { recursive: true, mode: 0o700 });
  return abs;
}

export function readStackState(dir: string): StackState {
  const file = join(resolve(dir), 'stack.json');
  if (!existsSync(file)) return {};
  try {
    const st = JSON.parse(readFileSync(file, 'utf8')) as StackState;
    return {
      ...st,
      redis: own(st.redis),
      hub: own(st.hub),
      dockerd: own(st.dockerd),
      ...(st.agents ? { agents: Object.fromEntries(Object.entries(st.agents).map(([n, a]) => [n, own(a)!])) } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * A service whose pid now belongs to a process started after the record was written (ours
 * died; the kernel gave the pid to another) reads as pid 0: stack down and the checks for what
 * runs never signal or count that stranger.
 */
function own<T extends ServiceState>(s: T | undefined): T | undefined {
  if (!s || !isAlive(s.pid) || isAliveSince(s.pid, s.startedAt)) return s;
  return { ...s, pid: 0 };
}

export function writeStackState(dir: string, state: StackState): void {
  const file = join(stateDir(dir), 'stack.json');
  // Write then rename, so a reader never sees half a file.
  writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

export { isAlive, stopPid } from '../../circe/runtime/pid.js';
