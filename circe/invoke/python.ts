// One persistent python3 process per runner serves every item (no interpreter start per item).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Launch } from '../compat/centralized.js';

/** The shim ships next to this module (dist/) or in the source tree (circe/invoke/). */
export function pyWorkerPath(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'py_worker.py')];
  let dir = here;
  for (let i = 0; i < 6; i++) {
    candidates.push(join(dir, 'circe', 'invoke', 'py_worker.py'));
    dir = dirname(dir);
  }
  const found = candidates.find((c) => existsSync(c));
  if (!found) throw new Error(`py_worker.py not found (looked in ${candidates.slice(0, 3).join(', ')}, ...)`);
  return found;
}

interface Pending {
  resolve(v: string[]): void;
  reject(e: Error): void;
}

export class PythonTaskError extends Error {
  constructor(message: string, readonly trace: string) {
    super(message);
    this.name = 'PythonTaskError';
  }
}

export class PythonWorker {
  private child?: ChildProcess;
  private ready?: Promise<void>;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  pid?: number;

  constructor(
    private readonly task: string,
    readonly scriptFile: string,
    private readonly python = process.env.JUPITER_PYTHON ?? 'python3',
    /** Original Jupiter apps: import from /centralized_scheduler (circe/compat/centralized.ts). */
    private readonly launch?: Pick<Launch, 'scriptsDir' | 'env' | 'wrap'>,
    /** File descriptor for the task's output (default: inherited). */
    private readonly stderr?: number,
  ) {}

  /** Start the interpreter and import the module (errors in the module surface here). */
  start(): Promise<void> {
    if (this.ready) return this.ready;
    // A script folder alone (ending in /): no module at start, each call names its own.
    const shared = this.scriptFile.endsWith('/');
    const scriptsDir = this.launch?.scriptsDir ?? (shared ? resolve(this.scriptFile) : dirname(resolve(this.scriptFile)));
    const moduleName = shared ? '' : basename(this.scriptFile).replace(/\.py$/, '');
    const cmd = this.launch?.wrap(this.python, ['-u', pyWorkerPath(), scriptsDir, moduleName]) ?? { cmd: this.python, args: ['-u', pyWorkerPath(), scriptsDir, moduleName] };
    const child = spawn(cmd.cmd, cmd.args, {
      // In a private mount namespace the folder exists only once the wrapper has mounted it.
      cwd: this.launch ? '/' : scriptsDir,
      stdio: ['pipe', 'pipe', this.stderr ?? 'inherit'],
      env: { ...process.env, ...this.launch?.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    this.child = child;
    this.pid = child.pid;
    this.ready = new Promise<void>((resolveReady, rejectReady) => {
      let started = false;
      const lines = createInterface({ input: child.stdout! });
      lines.on('line', (line) => {
        let msg: { ready?: boolean; id?: number; ok?: boolean; result?: string[]; error?: string; trace?: string };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          return; // not ours; the worker routes task output to stderr, so this cannot happen in practice
        }
        if (msg.ready !== undefined) {
          started = true;
          if (msg.ready) resolveReady();
          else rejectReady(new PythonTaskError(`cannot import task ${this.task} from ${this.scriptFile}: ${msg.error}`, msg.trace ?? ''));
          return;
        }
        const p = this.pending.get(msg.id ?? -1);
        if (!p) return;
        this.pending.delete(msg.id!);
        if (msg.ok) p.resolve(msg.result ?? []);
        else p.reject(new PythonTaskError(`task ${this.task} raised ${msg.error}`, msg.trace ?? ''));
      });
      child.on('error', (e) => {
        if (!started) rejectReady(new Error(`cannot start ${this.python}: ${e.message}`));
      });
      child.on('close', (code, signal) => {
        const why = new Error(`python worker of task ${this.task} exited (${signal ?? `code ${code}`})`);
        if (!started) rejectReady(why);
        for (const p of this.pending.values()) p.reject(why);
        this.pending.clear();
        // The next invoke starts a fresh interpreter.
        if (this.child === child) {
          this.child = undefined;
          this.ready = undefined;
        }
      });
    });
    // Avoid an unhandled rejection when nobody awaits a failed start.
    this.ready.catch(() => undefined);
    return this.ready;
  }

  /** `module`: another module of the script folder whose task to call (filename undefined: only import it). */
  async invoke(filename: string | string[] | undefined, pathin: string, pathout: string, module?: string): Promise<string[]> {
    await this.start();
    const child = this.child!;
    const id = this.nextId++;
    return new Promise<string[]>((resolveCall, rejectCall) => {
      this.pending.set(id, { resolve: resolveCall, reject: rejectCall });
      child.stdin!.write(`${JSON.stringify({ id, filename, pathin, pathout, module })}\n`);
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    this.ready = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((r) => child.once('close', () => r()));
    child.stdin!.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}
