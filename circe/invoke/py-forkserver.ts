// One Python interpreter that forks the Python workers of many tasks (py_forkserver.py): a node
// host's 60+ tasks then pay for one interpreter start instead of one each (~60-90 ms of CPU and
// ~7 MB apiece, all at deploy time), while every task still runs in a process of its own. A
// worker reaches us over a Unix socket in a folder only this user can enter; the server reports
// each worker's pid and, once reaped, its exit. The server (re)starts on first use, so a server
// that died only costs the next fork a fresh start.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { pyWorkerPath } from './python.js';

export interface ForkedWorker {
  pid: number;
  /** py_worker's protocol, both ways. */
  socket: Socket;
  /** How the worker ended ("code 3", "signal SIGKILL"), once it has. */
  exited: Promise<string>;
}

interface Waiting {
  resolve(w: ForkedWorker): void;
  reject(e: Error): void;
  pid?: number;
  socket?: Socket;
}

const SIGNALS: Record<number, string> = { 1: 'SIGHUP', 2: 'SIGINT', 6: 'SIGABRT', 9: 'SIGKILL', 11: 'SIGSEGV', 15: 'SIGTERM' };

class ServerLost extends Error {}

export class PyForkServer {
  private child?: ChildProcess;
  private server?: Server;
  private dir?: string;
  private starting?: Promise<void>;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();
  /** Exit reports by pid: the worker's listener, or the report that came first. */
  private readonly exits = new Map<number, ((why: string) => void) | string>();

  constructor(
    private readonly python = process.env.JUPITER_PYTHON ?? 'python3',
    /** File descriptor for the server's own output (default: inherited). */
    private readonly stderr?: number,
  ) {}

  private start(): Promise<void> {
    this.starting ??= new Promise<void>((resolve, reject) => {
      this.dir = mkdtempSync(join(tmpdir(), 'jupiter-pyfork-'));
      const path = join(this.dir, 's');
      const server = createServer((s) => this.hello(s));
      this.server = server;
      server.once('error', reject);
      server.listen(path, () => {
        const child = spawn(this.python, ['-u', join(dirname(pyWorkerPath()), 'py_forkserver.py'), path], {
          stdio: ['pipe', 'pipe', this.stderr ?? 'inherit'],
          env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
        });
        this.child = child;
        createInterface({ input: child.stdout! }).on('line', (line) => this.answer(line));
        child.on('error', (e) => this.lost(child, `cannot start ${this.python}: ${e.message}`));
        child.on('close', (code, signal) => this.lost(child, `python fork server exited (${signal ?? `code ${code}`})`));
        // A write to a server that just died must not throw out of the host.
        child.stdin!.on('error', () => undefined);
        resolve();
      });
    });
    return this.starting;
  }

  /** The server is gone: pending forks fail, and the next fork starts a new server. */
  private lost(child: ChildProcess, why: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.starting = undefined;
    this.server?.close();
    this.server = undefined;
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    for (const w of this.waiting.values()) w.reject(new ServerLost(why));
    this.waiting.clear();
  }

  private answer(line: string): void {
    let msg: { id?: number; pid?: number; error?: string; exit?: number; code?: number; signal?: number };
    try {
      msg = JSON.parse(line) as typeof msg;
    } catch {
      return;
    }
    if (msg.exit !== undefined) {
      const why = msg.signal !== undefined ? `signal ${SIGNALS[msg.signal] ?? msg.signal}` : `code ${msg.code}`;
      // Ended before it connected (its log file could not be opened, say): its fork fails.
      for (const [id, w] of this.waiting) {
        if (w.pid !== msg.exit || w.socket) continue;
        this.waiting.delete(id);
        w.reject(new Error(`python worker exited before it connected (${why})`));
        return;
      }
      const l = this.exits.get(msg.exit);
      if (typeof l === 'function') {
        this.exits.delete(msg.exit);
        l(why);
      } else {
        this.exits.set(msg.exit, why);
      }
      return;
    }
    const w = this.waiting.get(msg.id ?? -1);
    if (!w) return;
    if (msg.error !== undefined) {
      this.waiting.delete(msg.id!);
      w.reject(new Error(`cannot fork a python worker: ${msg.error}`));
      return;
    }
    w.pid = msg.pid;
    this.settle(msg.id!, w);
  }

  /** A worker's first line names its request; the rest of the stream is py_worker's. */
  private hello(s: Socket): void {
    let buf = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      buf = Buffer.concat([buf, chunk]);
      const nl = buf.indexOf(10);
      if (nl < 0) return;
      s.off('data', onData);
      s.pause();
      const rest = buf.subarray(nl + 1);
      if (rest.length > 0) s.unshift(rest);
      let id = -1;
      try {
        id = (JSON.parse(buf.subarray(0, nl).toString('utf8')) as { hello?: number }).hello ?? -1;
      } catch {
        // not one of ours
      }
      const w = this.waiting.get(id);
      if (!w || w.socket) {
        s.destroy();
        return;
      }
      w.socket = s;
      this.settle(id, w);
    };
    s.on('data', onData);
    s.on('error', () => undefined);
  }

  /** Both the pid (from the server) and the connection (from the worker) are needed. */
  private settle(id: number, w: Waiting): void {
    if (w.pid === undefined || !w.socket) return;
    this.waiting.delete(id);
    const pid = w.pid;
    const exited = new Promise<string>((resolve) => {
      const early = this.exits.get(pid);
      if (typeof early === 'string') {
        this.exits.delete(pid);
        resolve(early);
      } else {
        this.exits.set(pid, resolve);
      }
    });
    w.resolve({ pid, socket: w.socket, exited });
  }

  /** Fork a worker that imports `module` from `scriptsDir` ('' : none), its output appended to `stderrPath`. */
  async fork(scriptsDir: string, module: string, stderrPath?: string): Promise<ForkedWorker> {
    // A server found dead on the way (killed, say) is replaced once.
    for (let attempt = 1; ; attempt++) {
      await this.start();
      const child = this.child!;
      const id = this.nextId++;
      try {
        return await new Promise<ForkedWorker>((resolve, reject) => {
          this.waiting.set(id, { resolve, reject });
          child.stdin!.write(`${JSON.stringify({ id, scripts_dir: scriptsDir, module, stderr: stderrPath ?? null })}\n`);
        });
      } catch (e) {
        if (attempt >= 2 || !(e instanceof ServerLost)) throw e;
      }
    }
  }

  /** Stop forking (workers already forked run until their connection closes). */
  async close(): Promise<void> {
    const child = this.child;
    if (!child) return;
    const exited = new Promise<void>((r) => child.once('close', () => r()));
    child.stdin!.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await exited;
    clearTimeout(timer);
  }
}
