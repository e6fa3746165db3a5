// A fresh working directory for end-to-end tests: the real CLI runs with it as cwd, so the
// embedded stack (private redis-server, hub, agents), runner state and outputs all live in it.
// dispose() tears everything down through the CLI, then kills whatever pid is still recorded
// (stack.json, runner state files, python workers named in runner logs), then deletes the folder:
// safe to call from after() hooks whatever state a failed test left behind.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliResult } from '../support/cli.js';

export interface StackFile {
  redis?: { pid: number; url: string };
  hub?: { pid: number; httpUrl: string; mqttUrl: string; mqttWsUrl: string; mqttUsername?: string; mqttPassword?: string };
  agents?: Record<string, { pid: number }>;
}

export interface RunnerStateFile {
  file: string;
  supervisorPid: number;
  runnerPid: number | null;
  task: string;
  node: string;
}

import { isAlive } from '../../circe/runtime/pid.js';

export class WorkDir {
  readonly dir = mkdtempSync(join(tmpdir(), 'jupiter-e2e-'));
  /** CLI calls made, with their duration (printed by the tests as timings). */
  readonly calls: Array<{ args: string[]; ms: number; code: number }> = [];

  constructor(readonly env: NodeJS.ProcessEnv = {}) {}

  get stateDir(): string {
    return join(this.dir, '.jupiter');
  }

  async cli(args: string[], timeoutMs = 120_000): Promise<CliResult> {
    const t0 = Date.now();
    const r = await runCli(args, { cwd: this.dir, env: this.env, timeoutMs });
    this.calls.push({ args, ms: Date.now() - t0, code: r.code });
    return r;
  }

  /** Like cli(), but fails with everything the command printed unless it exits with `code`. */
  async expectCli(args: string[], code = 0, timeoutMs?: number): Promise<CliResult> {
    const r = await this.cli(args, timeoutMs);
    if (r.code !== code) {
      throw new Error(`jupiter ${args.join(' ')} exited ${r.code}, expected ${code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}\n${this.logTails()}`);
    }
    return r;
  }

  stack(): StackFile {
    const f = join(this.stateDir, 'stack.json');
    return existsSync(f) ? (JSON.parse(readFileSync(f, 'utf8')) as StackFile) : {};
  }

  stackPids(): number[] {
    const s = this.stack();
    return [s.redis?.pid, s.hub?.pid, ...Object.values(s.agents ?? {}).map((a) => a.pid)].filter((p): p is number => !!p);
  }

  runnerStates(app: string): RunnerStateFile[] {
    const dir = join(this.stateDir, 'apps', app);
    if (!existsSync(dir)) return [];
    return readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => ({ file: join(dir, f), ...(JSON.parse(readFileSync(join(dir, f), 'utf8')) as Omit<RunnerStateFile, 'file'>) }));
  }

  /** Pids of the persistent python workers, as the runners log them. */
  pythonWorkerPids(app: string): number[] {
    const dir = join(this.stateDir, 'apps', app);
    if (!existsSync(dir)) return [];
    return readdirSync(dir).filter((f) => f.endsWith('.log')).flatMap((f) =>
      [...readFileSync(join(dir, f), 'utf8').matchAll(/python worker pid (\d+)/g)].map((m) => Number(m[1])));
  }

  apps(): string[] {
    const dir = join(this.stateDir, 'apps');
    return existsSync(dir) ? readdirSync(dir) : [];
  }

  /** Every pid this directory's stack and runners have recorded. */
  allPids(): number[] {
    return [
      ...this.stackPids(),
      ...this.apps().flatMap((a) => [...this.runnerStates(a).flatMap((s) => [s.supervisorPid, s.runnerPid ?? 0]), ...this.pythonWorkerPids(a)]),
    ].filter((p) => p > 0);
  }

  /** The last lines of every log under .jupiter (for failure messages). */
  logTails(lines = 8): string {
    const out: string[] = [];
    const walk = (d: string): void => {
      if (!existsSync(d)) return;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.log')) out.push(`--- ${p.slice(this.dir.length + 1)}\n${readFileSync(p, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')}`);
      }
    };
    walk(this.stateDir);
    return out.join('\n');
  }

  async dispose(apps: string[] = []): Promise<void> {
    const recorded = this.allPids();
    if (this.stackPids().some(isAlive)) {
      for (const app of apps.length ? apps : this.apps()) await this.cli(['teardown', app], 60_000).catch(() => undefined);
      await this.cli(['stack', 'down'], 60_000).catch(() => undefined);
    }
    for (const pid of [...recorded, ...this.allPids()]) {
      if (isAlive(pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone meanwhile
        }
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** What `jupiter deploy` printed on stdout (table mode). */
export interface DeployOutput {
  placement: Record<string, string>;
  items: Array<{ item: string; state: string; makespanMs: number; outputs: string }>;
  outputDir: string;
  dashboardUrl?: string;
}

/** Rows of a cli-table3 table: the cells of every line starting with │. */
function tableRows(block: string): string[][] {
  return block.split('\n').filter((l) => l.startsWith('│')).map((l) => l.split('│').slice(1, -1).map((c) => c.trim()));
}

export function parseDeployOutput(stdout: string): DeployOutput {
  const placementPart = stdout.slice(stdout.indexOf('Placement of'), stdout.indexOf('mapper '));
  const rows = tableRows(placementPart);
  const placement = Object.fromEntries(rows.slice(1).map((r) => [r[0]!, r[1]!]));
  const itemsPart = stdout.includes('\nItems:') ? stdout.slice(stdout.indexOf('\nItems:'), stdout.indexOf('\noutputs:')) : '';
  const items = tableRows(itemsPart).slice(1).map((r) => ({ item: r[0]!, state: r[1]!, makespanMs: Number(r[2]), outputs: r[3]! }));
  const outputDir = /^outputs:\s+(\S+)$/m.exec(stdout)?.[1];
  if (!outputDir) throw new Error(`no "outputs:" line in:\n${stdout}`);
  return { placement, items, outputDir, dashboardUrl: /^dashboard:\s+(\S+)$/m.exec(stdout)?.[1] };
}

/** `jupiter status <app> --json` as the tests read it. */
export interface StatusJson {
  deployment: { app: string; runId: string; outputDir: string; runtime: string; mapper: string };
  mapping: { mapping: Record<string, string>; mapper: string };
  status: {
    tasks: Array<{ task: string; waiting: number; active: number; processed: number; failed: number }>;
    sink: { delivered: number; failed: number; waiting: number };
    items: { submitted: number; done: number; inFlight: number };
    makespan: { count: number; p50Ms?: number; p95Ms?: number };
    deadLetterCount: number;
  };
}

export async function statusJson(w: WorkDir, app: string): Promise<StatusJson> {
  const r = await w.expectCli(['status', app, '--json']);
  return JSON.parse(r.stdout) as StatusJson;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
