// A real Docker engine for tests: a private dockerd (own socket, data root, exec root, pidfile and
// bridge or none) started when the test needs it and stopped in after(). dockerd needs root; when
// it cannot start, tests skip with the printed reason.
// JUPITER_TEST_DOCKER_HOST=unix:///var/run/docker.sock uses an engine that is already running
// instead (for the first instance only; it is left running).
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, createReadStream, createWriteStream, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import Docker from 'dockerode';
import type { DockerEndpoint } from '../../config/types.js';
import { freePort } from '../../orchestrator/stack/free-port.js';

export interface TestDockerd {
  socketPath: string;
  endpoint: DockerEndpoint;
  docker: Docker;
  /** Address of the host on the engine's bridge (undefined with --bridge=none). */
  bridgeGateway?: string;
  /** Storage driver in use (overlay2, or vfs as a fallback). */
  storageDriver: string;
  /** With tls: true, the same engine over tcp://127.0.0.1:<port> with client certificate files. */
  tlsEndpoint?: DockerEndpoint;
  stop(): Promise<void>;
}

function onPath(bin: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why no engine can be started here, or undefined when one can. */
export function dockerdSkipReason(): string | undefined {
  if (process.env.JUPITER_TEST_DOCKER_HOST) return undefined;
  if (process.platform !== 'linux') return 'dockerd tests need Linux';
  if (process.getuid?.() !== 0) return 'dockerd needs root (run the tests as root or set JUPITER_TEST_DOCKER_HOST)';
  if (!onPath('dockerd')) return 'dockerd is not installed (apt-get install docker.io)';
  return undefined;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
  if (seed) rmSync(seed.dir, { recursive: true, force: true });
});

/**
 * The images every Docker suite needs before its own (the base image made from this machine's
 * files, the dependency layers, the agent image) are built once per test run: the first engine
 * that has them saves them when it stops, and later engines load them (~5 s) instead of building
 * them (~13 s). The seed grows: an engine that stops holding one the seed lacks (the first suite
 * to run agents on an engine builds the agent image after the base and deps were seeded) saves
 * them all again, so later suites do not build the agent image (~10 s) each. Suites about
 * building itself start with seedImages: false. The app images are never carried over.
 */
let seed: { dir: string; file: string; names: string[] } | undefined;
const SEEDED = /^jupiter\/(base|deps|agent):/;

/** Engines stopped together (Promise.all) save once: the first claims the seed at once. */
let seeding = false;

async function saveSeed(docker: Docker): Promise<void> {
  if (seeding) return;
  seeding = true;
  try {
    await saveSeedNow(docker);
  } finally {
    seeding = false;
  }
}

async function saveSeedNow(docker: Docker): Promise<void> {
  const names = (await docker.listImages()).flatMap((i) => i.RepoTags ?? []).filter((t) => SEEDED.test(t));
  if (!names.some((n) => n.startsWith('jupiter/base:')) || !names.some((n) => n.startsWith('jupiter/deps:'))) return;
  if (seed && names.every((n) => seed!.names.includes(n))) return;
  const dir = mkdtempSync('/tmp/jd-seed-');
  const file = join(dir, 'images.tar');
  try {
    const stream = await (docker as unknown as { getImages(o: { names: string[] }): Promise<NodeJS.ReadableStream> }).getImages({ names });
    await pipeline(stream, createWriteStream(file, { mode: 0o600 }));
    if (seed) rmSync(seed.dir, { recursive: true, force: true });
    seed = { dir, file, names };
  } catch {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function loadSeed(docker: Docker): Promise<void> {
  if (!seed) return;
  try {
    const out = (await docker.loadImage(createReadStream(seed.file), { quiet: true })) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) => docker.modem.followProgress(out, (err) => (err ? reject(err) : resolve())));
  } catch {
    // the suite builds them itself
  }
}

async function waitReady(docker: Docker, child: ChildProcess, log: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-8).join('\n') : '';
      throw new Error(`dockerd exited (${child.exitCode ?? child.signalCode}):\n${tail}`);
    }
    try {
      await docker.ping();
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`dockerd not ready after ${timeoutMs} ms (log: ${log})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Create a Linux bridge for this engine; returns its name and the host's address on it. */
function makeBridge(): { name: string; gateway: string } | undefined {
  if (!onPath('ip')) return undefined;
  const n = 100 + Math.floor(Math.random() * 150);
  const name = `jbr${process.pid % 100000}${n}`.slice(0, 15);
  const gateway = `172.31.${n}.1`;
  try {
    execFileSync('ip', ['link', 'add', name, 'type', 'bridge'], { stdio: 'ignore' });
    execFileSync('ip', ['addr', 'add', `${gateway}/24`, 'dev', name], { stdio: 'ignore' });
    execFileSync('ip', ['link', 'set', name, 'up'], { stdio: 'ignore' });
    return { name, gateway };
  } catch {
    try { execFileSync('ip', ['link', 'del', name], { stdio: 'ignore' }); } catch { /* not created */ }
    return undefined;
  }
}

/** A throw-away CA, server certificate (127.0.0.1) and client certificate, as PEM files in dir. */
function makeCerts(dir: string): { ca: string; cert: string; key: string; serverCert: string; serverKey: string } {
  const f = (n: string): string => join(dir, n);
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...ec, '-keyout', f('ca-key.pem'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=jupiter-test-ca');
  ssl('req', ...ec, '-keyout', f('server-key.pem'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca-key.pem'), '-CAcreateserial', '-out', f('server.pem'), '-days', '2', '-extfile', f('server.ext'));
  ssl('req', ...ec, '-keyout', f('key.pem'), '-out', f('client.csr'), '-subj', '/CN=jupiter-client');
  writeFileSync(f('client.ext'), 'extendedKeyUsage=clientAuth\n');
  ssl('x509', '-req', '-in', f('client.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca-key.pem'), '-CAcreateserial', '-out', f('cert.pem'), '-days', '2', '-extfile', f('client.ext'));
  return { ca: f('ca.pem'), cert: f('cert.pem'), key: f('key.pem'), serverCert: f('server.pem'), serverKey: f('server-key.pem') };
}

async function launch(dir: string, extra: string[]): Promise<{ child: ChildProcess; docker: Docker; socketPath: string; log: string }> {
  const socketPath = join(dir, 'docker.sock');
  const log = join(dir, 'dockerd.log');
  const fd = openSync(log, 'a');
  const child = spawn('dockerd', [
    `--host=unix://${socketPath}`,
    `--data-root=${join(dir, 'data')}`,
    `--exec-root=${join(dir, 'exec')}`,
    `--pidfile=${join(dir, 'docker.pid')}`,
    '--iptables=false',
    '--ip-masq=false',
    ...extra,
  ], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  live.add(child);
  child.once('exit', () => live.delete(child));
  const docker = new Docker({ socketPath });
  try {
    await waitReady(docker, child, log, 20_000);
  } catch (e) {
    await stopChild(child);
    throw e;
  }
  return { child, docker, socketPath, log };
}

/** dockerd 20.10 leaves <exec-root>/netns/default mounted after it exits: unmount, then delete. */
function removeDir(dir: string): void {
  const mounts = readFileSync('/proc/self/mounts', 'utf8').split('\n')
    .map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(`${dir}/`)).reverse();
  for (const m of mounts) {
    try { execFileSync('umount', ['-l', m], { stdio: 'ignore' }); } catch { /* already gone */ }
  }
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    // something still mounted; the OS temp cleaner gets it
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/**
 * Start a private dockerd. bridge: true gives it its own Linux bridge (containers in bridge mode
 * reach the host at bridgeGateway); otherwise --bridge=none (host networking only).
 */
export async function startTestDockerd(opts: { bridge?: boolean; useExisting?: boolean; tls?: boolean; seedImages?: boolean } = {}): Promise<TestDockerd> {
  const existing = process.env.JUPITER_TEST_DOCKER_HOST;
  if (existing && opts.useExisting !== false) {
    const socketPath = existing.replace(/^unix:\/\//, '');
    const docker = new Docker({ socketPath });
    await docker.ping();
    const info = (await docker.info()) as { Driver?: string };
    return { socketPath, endpoint: { kind: 'socket', socketPath }, docker, storageDriver: info.Driver ?? '?', async stop() { /* not ours */ } };
  }
  // Short path: containerd's socket lives under the exec root and unix socket paths are limited.
  const dir = mkdtempSync('/tmp/jd-');
  const bridge = opts.bridge ? makeBridge() : undefined;
  const net = bridge ? [`--bridge=${bridge.name}`] : ['--bridge=none'];
  let tlsEndpoint: DockerEndpoint | undefined;
  if (opts.tls && onPath('openssl')) {
    const c = makeCerts(dir);
    const port = await freePort();
    net.push(`--host=tcp://127.0.0.1:${port}`, '--tlsverify', `--tlscacert=${c.ca}`, `--tlscert=${c.serverCert}`, `--tlskey=${c.serverKey}`);
    tlsEndpoint = { kind: 'tcp', host: '127.0.0.1', port, tls: { ca: c.ca, cert: c.cert, key: c.key } };
  }
  let started: Awaited<ReturnType<typeof launch>>;
  let storageDriver = 'overlay2';
  try {
    try {
      started = await launch(dir, [...net, '--storage-driver=overlay2']);
    } catch {
      // e.g. /tmp on overlayfs inside a container: vfs always works (slower).
      storageDriver = 'vfs';
      started = await launch(dir, [...net, '--storage-driver=vfs']);
    }
  } catch (e) {
    if (bridge) try { execFileSync('ip', ['link', 'del', bridge.name], { stdio: 'ignore' }); } catch { /* gone */ }
    removeDir(dir);
    throw e;
  }
  const { child, docker, socketPath } = started;
  if (opts.seedImages !== false) await loadSeed(docker);
  return {
    socketPath,
    endpoint: { kind: 'socket', socketPath },
    docker,
    bridgeGateway: bridge?.gateway,
    storageDriver,
    tlsEndpoint,
    async stop() {
      await saveSeed(docker).catch(() => undefined);
      try {
        const all = await docker.listContainers({ all: true });
        await Promise.all(all.map((c) => docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined)));
      } catch { /* engine already gone */ }
      await stopChild(child);
      if (bridge) try { execFileSync('ip', ['link', 'del', bridge.name], { stdio: 'ignore' }); } catch { /* gone */ }
      removeDir(dir);
    },
  };
}
