// Shared helpers of the fault and security tests: small generated apps, N input files, the count
// line every fault test prints (`sent N, delivered N, lost 0, duplicates suppressed D`), and a
// throw-away working directory for the real CLI (its own .jupiter/ stack, torn down afterwards).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { appKeys } from '../../circe/queue/keys.js';
import { runCli, type CliResult } from './cli.js';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function pidAlive(pid: number | null | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function killPid(pid: number | null | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Whether `pid` is a process of the folder `root` (its working directory or its environment
 * names it). A pid from a state file whose process is gone may belong to a stranger by now: the
 * other test lane's runners (pid_max is 32768 here, and the suite starts processes by the
 * thousand); killing it failed that lane's test.
 */
export function pidOf(pid: number | null | undefined, root: string): boolean {
  if (!pid || !pidAlive(pid)) return false;
  try {
    if (readlinkSync(`/proc/${pid}/cwd`).startsWith(root)) return true;
  } catch {
    // gone, or not ours to read
  }
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(root);
  } catch {
    return false;
  }
}

export async function until<T>(fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number, what: string, pollMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(pollMs);
  }
}

export interface ChainAppOptions {
  /** Number of tasks in the chain t0 -> t1 -> ... -> home (default 3). */
  tasks?: number;
  /** Milliseconds each task sleeps per item (default 0). */
  sleepMs?: number;
  /** Per task index: sleep override (a slow consumer). */
  sleepOf?: Record<number, number>;
  /** Task index that throws on items whose content includes `FAIL` (every attempt). */
  failAt?: number;
  /** Task index that kills its own runner (SIGKILL) on items whose content includes `CRASH`. */
  crashAt?: number;
  /** `exec_profiler: false` for every task: deploy runs none of them before the deployment. */
  noExecProfile?: boolean;
}

/**
 * Write a linear chain of JavaScript tasks into <parent>/<name>/ (loadApp names an app after its
 * folder). Task t<i> appends `t<i>` to the content; its output is `<item>_t<i>.txt`, so the sink
 * writes `<item>_t<last>.txt` flat in the output folder. One sample input (`0s.txt`).
 */
export function writeChainApp(parent: string, name: string, opts: ChainAppOptions = {}): string {
  const dir = join(parent, name);
  const n = opts.tasks ?? 3;
  const names = Array.from({ length: n }, (_, i) => `t${i}`);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), `${n}\n${names.map((t, i) => `${t} 1 false ${names[i + 1] ?? 'home'}`).join('\n')}\n`);
  const map: Record<string, [string, boolean]> = {};
  names.forEach((t, i) => {
    map[t] = [t, true];
    const ms = opts.sleepOf?.[i] ?? opts.sleepMs ?? 0;
    writeFileSync(join(dir, 'scripts', `${t}.mjs`), [
      `// Fault-test task ${t}: appends its name${ms ? `, sleeps ${ms} ms` : ''}${opts.failAt === i ? ', throws on FAIL items' : ''}${opts.crashAt === i ? ', kills its runner on CRASH items' : ''}.`,
      "import { readFile, writeFile } from 'node:fs/promises';",
      "import { join } from 'node:path';",
      'export async function task(inputs, pathin, pathout) {',
      '  const [name] = inputs;',
      "  const body = await readFile(join(pathin, name), 'utf8');",
      opts.failAt === i ? `  if (body.includes('FAIL')) throw new Error('${t} refuses ' + name.split(/[_.]/)[0]);` : '',
      opts.crashAt === i ? "  if (body.includes('CRASH')) process.kill(process.pid, 'SIGKILL');" : '',
      ms ? `  await new Promise((r) => setTimeout(r, ${ms}));` : '',
      `  const out = join(pathout, name.split(/[_.]/)[0] + '_${t}.txt');`,
      `  await writeFile(out, body + '${t}\\n');`,
      '  return [out];',
      '}',
      '',
    ].filter((l) => l !== '').join('\n'));
  });
  writeFileSync(join(dir, 'scripts', 'config.json'), `${JSON.stringify({ taskname_map: map, exec_profiler: Object.fromEntries(names.map((t) => [t, !opts.noExecProfile])) }, null, 2)}\n`);
  writeFileSync(join(dir, 'sample_input', '0s.txt'), 'sample\n');
  return dir;
}

/** N input files `<i><tag>.txt` (i = 1..N) holding `<i><tag>\n`; their item ids are `<i><tag>`. */
export function writeItems(dir: string, n: number, tag: string, content?: (i: number) => string): string[] {
  mkdirSync(dir, { recursive: true });
  return Array.from({ length: n }, (_, k) => {
    const p = join(dir, `${k + 1}${tag}.txt`);
    writeFileSync(p, content?.(k + 1) ?? `${k + 1}${tag}\n`);
    return p;
  });
}

/** Every file under dir (relative paths), recursively. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name), join(rel, e.name));
      else out.push(join(rel, e.name));
    }
  };
  walk(dir, '');
  return out.sort();
}

export interface DeliveryCount {
  sent: number;
  /** Distinct expected outputs found in the output folder. */
  delivered: number;
  lost: number;
  /** Copies recognised and dropped: at the sink (same item + output name) and at the tasks. */
  duplicatesSuppressed: number;
  /** Output files beyond one per expected (item, name): must be 0. */
  extraFiles: number;
  /** The sink's own count of first deliveries (Redis stats `delivered`). */
  sinkDelivered: number;
  /** Expected outputs that are missing (the first few). */
  missing: string[];
  /** Items sent that were meant to fail (dead letters), when the test has some. */
  deadLettered?: number;
}

/**
 * Count what arrived: `expected` maps each sent item to the output file name the sink must have
 * written (relative to outputDir). Duplicates come from the app's Redis counters.
 */
export async function countDeliveries(redis: Redis, prefix: string, app: string, outputDir: string, expected: string[], extraFilesAllowed: string[] = [], deadLettered?: number): Promise<DeliveryCount> {
  const present = new Set(filesUnder(outputDir));
  const missing = expected.filter((f) => !present.has(f));
  const want = new Set([...expected, ...extraFilesAllowed]);
  const extra = [...present].filter((f) => !want.has(f));
  const stats = await redis.hgetall(appKeys(prefix, app).stats);
  const dups = Object.entries(stats).filter(([k]) => k === 'dupSuppressed' || k.startsWith('dup:')).reduce((a, [, v]) => a + Number(v), 0);
  return {
    sent: expected.length + (deadLettered ?? 0),
    delivered: expected.length - missing.length,
    lost: missing.length,
    deadLettered,
    duplicatesSuppressed: dups,
    extraFiles: extra.length,
    sinkDelivered: Number(stats.delivered ?? 0),
    missing: missing.slice(0, 5),
  };
}

/** The one line every fault test prints. */
export function countLine(c: DeliveryCount): string {
  const dead = c.deadLettered === undefined ? '' : `, dead-lettered ${c.deadLettered}`;
  return `sent ${c.sent}, delivered ${c.delivered}, lost ${c.lost}, duplicates suppressed ${c.duplicatesSuppressed}${dead}`;
}

export function printCounts(c: DeliveryCount): void {
  console.log(`      ${countLine(c)}`);
}

/** The Jupiter-owned environment variables, blanked so the developer's shell cannot leak in. */
export const CLEAN_JUPITER_ENV: Record<string, string> = Object.fromEntries(
  ['JUPITER_CONFIG', 'JUPITER_REDIS_URL', 'JUPITER_MQTT_URL', 'JUPITER_MQTT_USERNAME', 'JUPITER_MQTT_PASSWORD', 'JUPITER_MAPPER', 'JUPITER_RUNTIME']
    .map((k) => [k, '']),
);

interface RunnerStateFile { supervisorPid: number; runnerPid: number | null; task: string; node: string }

/**
 * A temporary working directory for the real CLI: the embedded stack lives in <cwd>/.jupiter and
 * outputs in <cwd>/runs. dispose() tears the app and the stack down and kills whatever is left.
 */
export class CliSandbox {
  readonly cwd: string;
  readonly transcript: CliResult[] = [];
  env: NodeJS.ProcessEnv;

  constructor(prefix = 'jupiter-fault-', env: NodeJS.ProcessEnv = {}) {
    this.cwd = mkdtempSync(join(tmpdir(), prefix));
    this.env = { ...CLEAN_JUPITER_ENV, ...env };
  }

  async run(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
    const r = await runCli(args, { cwd: this.cwd, env: { ...this.env, ...opts.env }, timeoutMs: opts.timeoutMs ?? 120_000 });
    this.transcript.push(r);
    return r;
  }

  /** Run and require exit 0 (the error shows the CLI's output). */
  async ok(args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
    const r = await this.run(args, opts);
    if (r.code !== 0) throw new Error(`jupiter ${args.join(' ')} exited ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`);
    return r;
  }

  get stateDir(): string {
    return join(this.cwd, '.jupiter');
  }

  stack(): { redis?: { pid: number; url: string }; hub?: { pid: number; mqttUrl: string; httpUrl: string }; agents?: Record<string, { pid: number }> } {
    const f = join(this.stateDir, 'stack.json');
    return existsSync(f) ? JSON.parse(readFileSync(f, 'utf8')) : {};
  }

  /** The process runtime's runner state files of an app: task@node -> pids. */
  runners(app: string): Array<RunnerStateFile & { file: string }> {
    const dir = join(this.stateDir, 'apps', app);
    if (!existsSync(dir)) return [];
    return readdirSync(dir).filter((f) => f.endsWith('.json')).flatMap((f) => {
      try {
        return [{ ...(JSON.parse(readFileSync(join(dir, f), 'utf8')) as RunnerStateFile), file: join(dir, f) }];
      } catch {
        return [];
      }
    });
  }

  /** Text of every log the deployment wrote: runner logs and the stack's logs. */
  logs(): Array<{ file: string; text: string }> {
    const out: Array<{ file: string; text: string }> = [];
    const walk = (d: string): void => {
      if (!existsSync(d)) return;
      for (const e of readdirSync(d, { withFileTypes: true })) {
        const p = join(d, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.log') && statSync(p).size < 50 * 1024 * 1024) out.push({ file: p, text: readFileSync(p, 'utf8') });
      }
    };
    walk(this.stateDir);
    return out;
  }

  async dispose(app?: string): Promise<void> {
    const r = await this.run(app ? ['teardown', app, '--stack'] : ['stack', 'down'], { timeoutMs: 60_000 }).catch(() => undefined);
    if (r && r.code !== 0 && app) await this.run(['stack', 'down'], { timeoutMs: 60_000 }).catch(() => undefined);
    // Whatever of this folder is still alive (a failed test may have left runners behind) goes now.
    const root = realpathSync(this.cwd);
    const kill = (pid: number | null | undefined): void => {
      if (pidOf(pid, root)) killPid(pid);
    };
    const appsDir = join(this.stateDir, 'apps');
    for (const a of existsSync(appsDir) ? readdirSync(appsDir) : []) {
      for (const s of this.runners(a)) {
        kill(s.supervisorPid);
        kill(s.runnerPid);
      }
    }
    const st = this.stack();
    for (const a of Object.values(st.agents ?? {})) kill(a.pid);
    kill(st.hub?.pid);
    kill(st.redis?.pid);
    rmSync(this.cwd, { recursive: true, force: true });
  }
}
