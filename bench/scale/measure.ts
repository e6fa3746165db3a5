// What a deployment costs the machine and Redis, for bench:scale: the processes it runs (found
// by their JUPITER_APP / JUPITER_REDIS_PREFIX environment, so supervisors, runners, node hosts
// and Python workers all count) with their proportional memory (PSS: shared pages split between
// the processes sharing them), and Redis's clients, memory and keys.
import { readdirSync, readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { cpuUs } from '../proc-cpu.js';

export interface ProcMemory {
  processes: number;
  /** Sum of PSS, bytes. */
  pssBytes: number;
  /** Sum of RSS, bytes (counts shared pages once per process). */
  rssBytes: number;
  /** CPU time the processes used so far (user + system), ms: start-up work, whatever the load. */
  cpuMs: number;
  byKind: Record<string, { processes: number; pssBytes: number; cpuMs: number }>;
}

function envOf(pid: string): Map<string, string> | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/environ`, 'latin1');
    return new Map(raw.split('\0').filter(Boolean).map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i), kv.slice(i + 1)] as [string, string];
    }));
  } catch {
    return undefined;
  }
}

function rollup(pid: string): { pss: number; rss: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kb = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
    return { pss: kb('Pss') * 1024, rss: kb('Rss') * 1024 };
  } catch {
    return undefined;
  }
}

function cmdOf(pid: string): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

/**
 * The script an interpreter runs (main.js, py_worker.py), else the program (docker-init, the
 * container's PID 1, whose arguments name main.js too); a forked Python worker carries its fork
 * server's command line, so it is told apart by its parent.
 */
function kindOf(pid: string): string {
  const cmd = cmdOf(pid);
  const exe = (cmd[0] ?? '?').split('/').pop()!;
  if (!/^(node|python[0-9.]*)$/.test(exe)) return exe;
  const script = (cmd.find((a) => /\.(js|py)$/.test(a)) ?? exe).split('/').pop()!;
  if (script !== 'py_forkserver.py') return script;
  try {
    const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]!;
    return cmdOf(ppid).some((a) => a.endsWith('py_forkserver.py')) ? 'py_worker.py (forked)' : script;
  } catch {
    return script;
  }
}

/** Processes of the given apps under one Redis prefix, and their memory. */
export function deploymentMemory(apps: string[], prefix: string): ProcMemory {
  const out: ProcMemory = { processes: 0, pssBytes: 0, rssBytes: 0, cpuMs: 0, byKind: {} };
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    const env = envOf(pid);
    if (!env || env.get('JUPITER_REDIS_PREFIX') !== prefix) continue;
    const app = env.get('JUPITER_APP') ?? '';
    if (!apps.includes(app)) continue;
    const m = rollup(pid);
    if (!m) continue;
    out.processes++;
    out.pssBytes += m.pss;
    out.rssBytes += m.rss;
    const cpu = Math.round(cpuUs(Number(pid)) / 1000) || 0;
    out.cpuMs += cpu;
    const k = kindOf(pid);
    const slot = (out.byKind[k] ??= { processes: 0, pssBytes: 0, cpuMs: 0 });
    slot.processes++;
    slot.pssBytes += m.pss;
    slot.cpuMs += cpu;
  }
  return out;
}

export interface RedisFigures {
  clients: number;
  usedMemoryBytes: number;
  keys: number;
}

export async function redisFigures(redis: Redis): Promise<RedisFigures> {
  const info = await redis.info();
  const num = (k: string): number => Number(new RegExp(`^${k}:(\\d+)`, 'm').exec(info)?.[1] ?? NaN);
  return { clients: num('connected_clients') - 1, usedMemoryBytes: num('used_memory'), keys: await redis.dbsize() };
}

export const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
