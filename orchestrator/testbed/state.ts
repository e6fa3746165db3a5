// The testbed's state file (<dir>/testbed.json): everything `up` made, written as it goes, so that
// `status`, `link` and `down` work from later CLI invocations, and `down` can undo a failed `up`;
// a copy in its run root (/run/jtb<id>) outlives a deleted folder (`down --id`).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { inputError } from '../../config/errors.js';
import { isAliveSince } from '../../circe/runtime/pid.js';
import { PREFIX, RUN_BASE } from './plan.js';

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
  return readStateFile(join(dir, STATE_FILE));
}

function readStateFile(file: string): TestbedState | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as TestbedState;
}

/** The folder a testbed was made in (its cluster configuration is there). */
export function folderOf(state: TestbedState): string {
  return dirname(state.configFile);
}

/**
 * Every testbed on this machine, from the copy of its state each keeps in its run root
 * (/run/jtb<id>/testbed.json): what `down --id` works from when the testbed's folder is gone.
 */
export function machineTestbeds(): TestbedState[] {
  let names: string[] = [];
  try {
    names = readdirSync(RUN_BASE).filter((n) => n.startsWith(PREFIX));
  } catch {
    return [];
  }
  return names.flatMap((n) => {
    try {
      const s = readStateFile(join(RUN_BASE, n, STATE_FILE));
      return s ? [s] : [];
    } catch {
      return []; // not ours to read: another program's folder of that name
    }
  });
}

/** The testbeds whose folder no longer holds their state, a line each with the command that removes them. */
function orphanLines(): string[] {
  return machineTestbeds()
    .filter((s) => !existsSync(join(folderOf(s), STATE_FILE)))
    .map((s) => `${s.name} (${PREFIX}${s.id}, made in ${folderOf(s)}): \`jupiter testbed down --id ${s.id}\``);
}

/** The state of a testbed that `up` made in dir; a clear error when there is none. */
export function requireTestbedState(dir: string): TestbedState {
  const s = readTestbedState(dir);
  if (!s) {
    const orphans = orphanLines();
    const also = orphans.length ? `; testbeds on this machine whose folder is gone: ${orphans.join('; ')}` : '';
    throw inputError(`no testbed in ${dir} (no ${STATE_FILE})`, { hint: `start one with \`jupiter testbed up <topology.json|edge-fog-cloud|mesh-N>\`, or pass the --dir it was started with${also}` });
  }
  return s;
}

/** The state of testbed jtb<id> from its run root's copy, for `down --id`; a clear error when there is none. */
export function requireTestbedById(id: string): TestbedState {
  const all = machineTestbeds();
  const s = all.find((t) => t.id === id);
  if (!s) {
    const known = all.map((t) => `${t.id} (${t.name}, ${folderOf(t)})`);
    throw inputError(`no testbed ${PREFIX}${id} on this machine (no ${join(RUN_BASE, `${PREFIX}${id}`, STATE_FILE)})`, { hint: known.length ? `testbeds here: ${known.join(', ')}` : 'there is no testbed on this machine' });
  }
  return s;
}

export function writeTestbedState(dir: string, state: TestbedState): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Also in the run root (root's tmpfs, gone at a reboot like everything the testbed made), so
  // that a testbed whose folder was deleted can still be taken down (`down --id`).
  mkdirSync(state.runRoot, { recursive: true, mode: 0o700 });
  for (const file of [join(dir, STATE_FILE), join(state.runRoot, STATE_FILE)]) {
    // Write then rename: a reader never sees half a file. 0600: the Redis URL holds a password.
    writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  }
}
