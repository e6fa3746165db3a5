// The testbed's state file (<dir>/testbed.json): everything `up` made, written as it goes, so that
// `status`, `link` and `down` work from later CLI invocations, and `down` can undo a failed `up`.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inputError } from '../../config/errors.js';
import { isAliveSince } from '../../circe/runtime/pid.js';

/** A process the testbed started: its pid, and when (a pid reused since is not it: ownsPid). */
export interface ProcessRecord {
  pid: number;
  /** When the process started (ms, from /proc); absent in state files written before it was recorded. */
  startedAt?: number;
}

export interface EngineState extends ProcessRecord {
  socket: string;
  dataRoot: string;
  execRoot: string;
  log: string;
  /** cgroup (v1 path under each controller) holding the host's containers, when it has a CPU limit. */
  cgroup?: string;
}

export interface HostState {
  name: string;
  ns: string;
  addr: string;
  /** Bridge side (root namespace) and namespace side of the host's veth pair. */
  outer: string;
  inner: string;
  /** htb class minor of traffic towards this host, on every other host's veth. */
  classMinor: number;
  uplinkBps: number;
  cpus?: number;
  /** The home has none: Redis runs there instead. */
  engine?: EngineState;
}

export interface LinkFault {
  down?: boolean;
  lossPercent?: number;
}

export interface TestbedState {
  id: string;
  name: string;
  /** First three octets of the /24. */
  net: string;
  bridge: string;
  bridgeAddr: string;
  /** Root-namespace iptables rule letting bridged testbed traffic through FORWARD (argv after -A/-D). */
  forwardRule?: string[];
  /** The home first. */
  hosts: HostState[];
  /** rates[from][to], bits/s: as shaped now. */
  rates: Record<string, Record<string, number>>;
  /** Faults per directed pair "a>b". */
  faults: Record<string, LinkFault>;
  /** /run/jtb<id> (sockets, exec roots) and /var/lib/jtb<id> (engine data roots). */
  runRoot: string;
  dataRoot: string;
  redis?: ProcessRecord & { port: number; url: string; dir: string };
  configFile: string;
  createdAt: number;
  /** false while `up` runs (and after it failed). */
  complete: boolean;
}

export const STATE_FILE = 'testbed.json';

/**
 * Whether the recorded process still runs and is the one recorded: pids wrap within minutes on a
 * busy machine (pid_max 32,768 here), and `down` or a Redis restart must not signal a stranger.
 */
export function ownsPid(rec: ProcessRecord | undefined): boolean {
  return rec !== undefined && isAliveSince(rec.pid, rec.startedAt);
}

export function testbedDir(dir: string | undefined): string {
  return resolve(dir ?? 'jupiter-testbed');
}

export function readTestbedState(dir: string): TestbedState | undefined {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as TestbedState;
}

/** The state of a testbed that `up` made in dir; a clear error when there is none. */
export function requireTestbedState(dir: string): TestbedState {
  const s = readTestbedState(dir);
  if (!s) throw inputError(`no testbed in ${dir} (no ${STATE_FILE})`, { hint: 'start one with `jupiter testbed up <topology.json|edge-fog-cloud|mesh-N>`, or pass the --dir it was started with' });
  return s;
}

export function writeTestbedState(dir: string, state: TestbedState): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, STATE_FILE);
  // Write then rename: a reader never sees half a file. 0600: the Redis URL holds a password.
  writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}
