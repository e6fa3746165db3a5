// One persistent python3 process per runner serves every item (no interpreter start per item);
// in a node host it is forked from the host's fork server (py-forkserver.ts).
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Launch } from '../compat/centralized.js';
import type { ForkedWorker, PyForkServer } from './py-forkserver.js';

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

/**
 * Where `python3` leads (its sys.executable), for callers to ask once: a version manager's shim
 * (pyenv's is a shell script running ~40 processes) costs more than the interpreter's own start,
 * once per task otherwise. Throws when python3 cannot be run.
 */
export function pythonExecutable(): string {
  return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8', timeout: 10_000 }).trim();
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

/** A running worker, whichever way it was started. */
interface WorkerPipe {
  pid?: number;
  input: Readable;
  write(line: string): void;
  end(): void;
  kill(): void;
  /** Resolves once the worker is gone: "exited (code 3)". */
  exited: Promise<string>;
}

export class PythonWorker {
  private pipe?: Promise<WorkerPipe>;
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
    /** Fork the worker from this server (its output appended to stderrPath) instead of starting an interpreter. */
    private readonly fork?: { server: PyForkServer; stderrPath?: string },
  ) {}

  /** Start the interpreter and import the module (errors in the module surface here). */
  start(): Promise<void> {
    if (this.ready) return this.ready;
    // A script folder alone (ending in /): no module at start, each call names its own.
    const shared = this.scriptFile.endsWith('/');
    const scriptsDir = this.launch?.scriptsDir ?? (shared ? resolve(this.scriptFile) : dirname(resolve(this.scriptFile)));
    const moduleName = shared ? '' : basename(this.scriptFile).replace(/\.py$/, '');
    // Original apps' wrapper (a private mount namespace) needs a process of its own.
    const pipe = this.fork && !this.launch ? this.forked(scriptsDir, moduleName) : this.spawned(scriptsDir, moduleName);
    this.pipe = pipe;
    // A worker that could not be had at all: the next start tries again.
    pipe.catch(() => {
      if (this.pipe === pipe) {
        this.pipe = undefined;
        this.ready = undefined;
      }
    });
    this.ready = pipe.then((p) => new Promise<void>((resolveReady, rejectReady) => {
      this.pid = p.pid;
      let started = false;
      const lines = createInterface({ input: p.input });
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
        const pending = this.pending.get(msg.id ?? -1);
        if (!pending) return;
        this.pending.delete(msg.id!);
        if (msg.ok) pending.resolve(msg.result ?? []);
        else pending.reject(new PythonTaskError(`task ${this.task} raised ${msg.error}`, msg.trace ?? ''));
      });
      void p.exited.then((how) => {
        const why = new Error(`python worker of task ${this.task} ${how}`);
        if (!started) rejectReady(why);
        for (const pending of this.pending.values()) pending.reject(why);
        this.pending.clear();
        // The next invoke starts a fresh interpreter.
        if (this.pipe === pipe) {
          this.pipe = undefined;
          this.ready = undefined;
        }
      });
    }));
    // Avoid an unhandled rejection when nobody awaits a failed start.
    this.ready.catch(() => undefined);
    return this.ready;
  }

  /** An interpreter of its own. */
  private async spawned(scriptsDir: string, moduleName: string): Promise<WorkerPipe> {
    const cmd = this.launch?.wrap(this.python, ['-u', pyWorkerPath(), scriptsDir, moduleName]) ?? { cmd: this.python, args: ['-u', pyWorkerPath(), scriptsDir, moduleName] };
    const child = spawn(cmd.cmd, cmd.args, {
      // In a private mount namespace the folder exists only once the wrapper has mounted it.
      cwd: this.launch ? '/' : scriptsDir,
      stdio: ['pipe', 'pipe', this.stderr ?? 'inherit'],
      env: { ...process.env, ...this.launch?.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    // The worker's end is reported by `exited`, not by write errors on its input.
    child.stdin!.on('error', () => undefined);
    return {
      pid: child.pid,
      input: child.stdout!,
      write: (line) => child.stdin!.write(line),
      end: () => child.stdin!.end(),
      kill: () => child.kill('SIGKILL'),
      exited: new Promise((r) => {
        child.on('error', (e) => {
          if (child.pid === undefined) r(`could not start (${this.python}: ${e.message})`);
        });
        child.on('close', (code, signal) => r(`exited (${signal ?? `code ${code}`})`));
      }),
    };
  }

  /** A process forked by the node host's fork server (py_forkserver.py). */
  private async forked(scriptsDir: string, moduleName: string): Promise<WorkerPipe> {
    let w: ForkedWorker;
    try {
      w = await this.fork!.server.fork(scriptsDir, moduleName, this.fork!.stderrPath);
    } catch (e) {
      // No fork server here (cannot listen, cannot start): an interpreter of its own, as without one.
      if (this.stderr !== undefined) writeSync(this.stderr, `${new Date().toISOString()} python fork server unavailable (${(e as Error).message}); starting an interpreter for task ${this.task}\n`);
      return this.spawned(scriptsDir, moduleName);
    }
    const closed = new Promise<void>((r) => w.socket.once('close', () => r()));
    w.socket.on('error', () => undefined);
    return {
      pid: w.pid,
      input: w.socket,
      write: (line) => w.socket.write(line),
      end: () => w.socket.end(),
      kill: () => {
        try {
          process.kill(w.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      },
      // The connection closes as the worker ends; its exit status follows from the server (or not, if the server died).
      exited: closed.then(() => Promise.race([w.exited, new Promise<string>((r) => setTimeout(() => r('connection closed'), 1000).unref())]))
        .then((how) => (how === 'connection closed' ? 'exited (connection closed)' : `exited (${how})`)),
    };
  }

  /** `module`: another module of the script folder whose task to call (filename undefined: only import it). */
  async invoke(filename: string | string[] | undefined, pathin: string, pathout: string, module?: string): Promise<string[]> {
    await this.start();
    const pipe = await this.pipe;
    if (!pipe) throw new Error(`python worker of task ${this.task} exited`);
    const id = this.nextId++;
    return new Promise<string[]>((resolveCall, rejectCall) => {
      this.pending.set(id, { resolve: resolveCall, reject: rejectCall });
      pipe.write(`${JSON.stringify({ id, filename, pathin, pathout, module })}\n`);
    });
  }

  async close(): Promise<void> {
    const pipe = this.pipe;
    this.pipe = undefined;
    this.ready = undefined;
    const p = await pipe?.catch(() => undefined);
    if (!p) return;
    // The end of its input ends the worker; one that does not leave is killed.
    p.end();
    const timer = setTimeout(() => p.kill(), 2000);
    await p.exited;
    clearTimeout(timer);
  }
}
