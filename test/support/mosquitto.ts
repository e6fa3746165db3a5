// Debian's mosquitto for tests: a TCP and a WebSocket listener on free loopback ports, either
// anonymous or with a password file, plus optionally a TLS listener (server certificate, and a CA
// when client certificates are required). Tests that need it skip when the binary is missing.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, openSync, closeSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../orchestrator/stack/free-port.js';

export const MOSQUITTO_BIN = '/usr/sbin/mosquitto';
export const MOSQUITTO_PASSWD_BIN = '/usr/bin/mosquitto_passwd';

export function haveMosquitto(): boolean {
  return existsSync(MOSQUITTO_BIN);
}

export interface TestMosquitto {
  tcpUrl: string;
  wsUrl: string;
  port: number;
  wsPort: number;
  /** With opts.tls: mqtts://127.0.0.1:<tlsPort>. */
  tlsUrl?: string;
  tlsPort?: number;
  /** Stop the process (keeps its ports and files so start() can bring it back). */
  stop(): Promise<void>;
  /** Start again on the same ports. */
  start(): Promise<void>;
  /** Stop and delete its folder. */
  dispose(): Promise<void>;
}

export interface MosquittoTls {
  /** PEM files of the server certificate and its key. */
  certFile: string;
  keyFile: string;
  /** CA of client certificates; with requireCertificate, clients must present one it signed. */
  caFile?: string;
  requireCertificate?: boolean;
}

export async function startMosquitto(opts: { username?: string; password?: string; tls?: MosquittoTls } = {}): Promise<TestMosquitto> {
  const dir = mkdtempSync(join(tmpdir(), 'jupiter-mosquitto-'));
  const port = await freePort();
  const wsPort = await freePort();
  const lines = [
    'per_listener_settings false',
    'persistence false',
    'log_dest stdout',
    'log_type error',
    'log_type warning',
    `listener ${port} 127.0.0.1`,
    'protocol mqtt',
    `listener ${wsPort} 127.0.0.1`,
    'protocol websockets',
  ];
  const tlsPort = opts.tls ? await freePort() : undefined;
  if (opts.tls && tlsPort !== undefined) {
    // Settings after a `listener` line apply to that listener.
    lines.push(`listener ${tlsPort} 127.0.0.1`, 'protocol mqtt', `certfile ${opts.tls.certFile}`, `keyfile ${opts.tls.keyFile}`);
    if (opts.tls.caFile) lines.push(`cafile ${opts.tls.caFile}`);
    if (opts.tls.requireCertificate) lines.push('require_certificate true');
  }
  // As root, mosquitto drops to user `mosquitto`, which could not read our temporary files.
  if (userInfo().uid === 0) lines.push('user root');
  if (opts.username !== undefined) {
    const pwfile = join(dir, 'passwd');
    execFileSync(MOSQUITTO_PASSWD_BIN, ['-b', '-c', pwfile, opts.username, opts.password ?? ''], { stdio: 'ignore' });
    lines.push('allow_anonymous false', `password_file ${pwfile}`);
  } else {
    lines.push('allow_anonymous true');
  }
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, `${lines.join('\n')}\n`);
  const logFile = join(dir, 'mosquitto.log');
  let child: ChildProcess | undefined;

  const start = async (): Promise<void> => {
    const log = openSync(logFile, 'a');
    const c = spawn(MOSQUITTO_BIN, ['-c', conf], { stdio: ['ignore', log, log] });
    closeSync(log);
    child = c;
    let exited = false;
    c.once('exit', () => (exited = true));
    const deadline = Date.now() + 10_000;
    while (!(await canConnect(port)) || !(await canConnect(wsPort)) || (tlsPort !== undefined && !(await canConnect(tlsPort)))) {
      if (exited || Date.now() > deadline) {
        throw new Error(`mosquitto did not start: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 30));
    }
  };
  const stop = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGTERM');
    const t = setTimeout(() => c.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(t);
  };
  await start();
  return {
    tcpUrl: `mqtt://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${wsPort}`,
    port,
    wsPort,
    ...(tlsPort !== undefined ? { tlsUrl: `mqtts://127.0.0.1:${tlsPort}`, tlsPort } : {}),
    start,
    stop,
    async dispose() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
