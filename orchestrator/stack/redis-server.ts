// A private redis-server process: the embedded default's Redis, and the one tests start.
// Settings follow BullMQ's production advice: noeviction, and append-only persistence when asked.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from '../../circe/queue/libs.js';
import { runtimeError } from '../../config/errors.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { freePort } from './free-port.js';

export interface RedisServerOptions {
  /** Data and log folder. */
  dir: string;
  port?: number;
  bind?: string;
  /** Append-only persistence (survives a restart of the server). */
  appendOnly?: boolean;
  password?: string;
  /** Keep running after this process exits (embedded stack). */
  detached?: boolean;
  binary?: string;
  /** Command prefix, e.g. `nsenter --net=...` (the testbed runs Redis in the home's namespace). */
  wrap?: string[];
}

export class RedisServer {
  private child?: ChildProcess;
  port = 0;
  private readonly opts: RedisServerOptions;

  constructor(opts: RedisServerOptions) {
    this.opts = opts;
  }

  get url(): string {
    const auth = this.opts.password ? `:${encodeURIComponent(this.opts.password)}@` : '';
    return `redis://${auth}${this.opts.bind ?? '127.0.0.1'}:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(timeoutMs = 10_000): Promise<this> {
    this.port = this.opts.port ?? (await freePort());
    mkdirSync(this.opts.dir, { recursive: true });
    // The configuration goes in on stdin (`redis-server -`), so a password never shows in the
    // process list; values are quoted for paths with spaces.
    const q = (v: string) => `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    const conf = [
      `port ${this.port}`,
      `bind ${this.opts.bind ?? '127.0.0.1'}`,
      `dir ${q(this.opts.dir)}`,
      'save ""',
      `appendonly ${this.opts.appendOnly ? 'yes' : 'no'}`,
      'appendfsync everysec',
      'maxmemory-policy noeviction',
      'daemonize no',
      ...(this.opts.password ? [`requirepass ${q(this.opts.password)}`] : []),
    ].join('\n');
    const log = openSync(join(this.opts.dir, 'redis.log'), 'a');
    const argv = [...(this.opts.wrap ?? []), this.opts.binary ?? 'redis-server', '-'];
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: ['pipe', log, log],
      detached: this.opts.detached ?? false,
    });
    child.stdin?.on('error', () => undefined); // a server that failed to start closes it early
    child.stdin?.end(`${conf}\n`);
    closeSync(log);
    this.child = child;
    const failed = new Promise<never>((_, reject) => {
      child.once('error', (e) => reject(runtimeError(`cannot start redis-server: ${e.message}`, {
        hint: 'install it with `npm run setup` (Debian package redis-server) or set JUPITER_REDIS_URL',
      }, e)));
      child.once('exit', (code) => reject(runtimeError(`redis-server exited with code ${code}`, {
        file: join(this.opts.dir, 'redis.log'),
      })));
    });
    try {
      await Promise.race([waitForRedis(this.url, timeoutMs), failed]);
    } catch (e) {
      // Never leave a server behind that nobody knows of (a detached one outlives us).
      failed.catch(() => undefined);
      await this.stop(1000);
      throw e;
    }
    child.removeAllListeners('exit');
    if (this.opts.detached) child.unref();
    return this;
  }

  /** Stop the server (SIGTERM, then SIGKILL after a grace period). */
  async stop(graceMs = 3000): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** Resolve once a PING succeeds at url, or fail after timeoutMs. */
export async function waitForRedis(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
    // The 'error' event carries the reason (ECONNREFUSED, WRONGPASS); connect() only says closed.
    let reason: Error | undefined;
    client.on('error', (e: Error) => (reason = e));
    try {
      await client.connect();
      await client.ping();
      client.disconnect();
      return;
    } catch (e) {
      client.disconnect();
      const why = reason ?? (e as Error);
      // Wrong credentials do not get better by waiting.
      const denied = /WRONGPASS|NOAUTH|NOPERM/.test(why.message);
      if (denied || Date.now() > deadline) {
        throw runtimeError(`Redis at ${maskUrl(url)} ${denied ? 'refused the credentials' : 'is not reachable'}: ${why.message}`, {}, why);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
