// A throw-away OpenSSH server for tests of ssh:// Docker endpoints: `sshd -D` on a free loopback
// port with a generated host key, key-only login for a generated client key (root allowed only
// with that key: tests run as root), and DOCKER_HOST set for every session so the remote
// `docker system dial-stdio` reaches the private dockerd. An ssh-agent holding the client key can
// be started too. Everything lives in one temp folder removed by stop().
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../../orchestrator/stack/free-port.js';

export const SSHD = '/usr/sbin/sshd';

export interface TestSshd {
  host: '127.0.0.1';
  port: number;
  user: 'root';
  /** ssh://root@127.0.0.1:<port> */
  url: string;
  /** Unencrypted private key (OpenSSH format) that may log in. */
  clientKey: string;
  /** A known_hosts file listing this server's host key as [127.0.0.1]:<port>. */
  knownHosts: string;
  /** A known_hosts file listing a different key for the same host (a "changed host key"). */
  wrongKnownHosts: string;
  /** Start an ssh-agent holding the client key; returns its socket (stopped by stop()). */
  startAgent(): Promise<string>;
  /** The server's log so far (for failure messages). */
  log(): string;
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Why no sshd can be started here, or undefined when one can. */
export function sshdSkipReason(): string | undefined {
  if (process.platform !== 'linux') return 'sshd tests need Linux';
  if (process.getuid?.() !== 0) return 'the test sshd logs in as root and needs root to start';
  if (!existsSync(SSHD)) return `${SSHD} is not installed (apt-get install openssh-server)`;
  for (const bin of ['ssh-keygen', 'ssh-agent', 'ssh-add']) {
    try {
      execFileSync('sh', ['-c', `command -v ${bin}`], { stdio: 'ignore' });
    } catch {
      return `${bin} is not installed (apt-get install openssh-client)`;
    }
  }
  return undefined;
}

function keygen(file: string, comment: string): string {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', file], { stdio: 'ignore' });
  return readFileSync(`${file}.pub`, 'utf8').trim();
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/** Start sshd; sessions get DOCKER_HOST=<dockerHost> (e.g. unix:///tmp/jd-x/docker.sock). */
export async function startTestSshd(opts: { dockerHost: string }): Promise<TestSshd> {
  const dir = mkdtempSync('/tmp/jssh-');
  const children: ChildProcess[] = [];
  const logFile = join(dir, 'sshd.log');
  const log = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const stop = async (): Promise<void> => {
    await Promise.all(children.map(stopChild));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // sshd refuses to start without its privilege separation directory (made by systemd normally).
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    const hostPub = keygen(join(dir, 'host_key'), 'jupiter-test-host');
    const otherPub = keygen(join(dir, 'other_host_key'), 'jupiter-test-other');
    const clientKey = join(dir, 'id_ed25519');
    const clientPub = keygen(clientKey, 'jupiter-test-client');
    writeFileSync(join(dir, 'authorized_keys'), `${clientPub}\n`, { mode: 0o600 });
    const port = await freePort();
    const known = (pub: string): string => `[127.0.0.1]:${port} ${pub.split(' ').slice(0, 2).join(' ')}\n`;
    writeFileSync(join(dir, 'known_hosts'), known(hostPub));
    writeFileSync(join(dir, 'wrong_known_hosts'), known(otherPub));
    const config = join(dir, 'sshd_config');
    writeFileSync(config, [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${join(dir, 'host_key')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      'AllowUsers root',
      'PermitRootLogin prohibit-password',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      // The key files sit under /tmp (world-writable), which StrictModes rejects.
      'StrictModes no',
      'X11Forwarding no',
      'AllowTcpForwarding no',
      'MaxSessions 32',
      // SHLVL=1: bash (the login shell running each session's command) then counts itself nested
      // and skips ~/.bashrc, which Debian's bash sources for sshd's sessions. Root's ~/.bashrc on
      // these machines runs `pyenv init` (~40 processes): 0.8 s a session on a quiet machine,
      // seconds in a loaded CI lane, and every Docker API channel is a session. (Only the first
      // SetEnv line counts: one line for both.)
      `SetEnv DOCKER_HOST=${opts.dockerHost} SHLVL=1`,
      'LogLevel VERBOSE',
      '',
    ].join('\n'));
    execFileSync(SSHD, ['-t', '-f', config], { stdio: 'pipe' });
    const fd = openSync(logFile, 'a');
    const sshd = track(spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', fd, fd] }));
    closeSync(fd);
    children.push(sshd);
    const deadline = Date.now() + 10_000;
    while (!(await portOpen(port))) {
      if (sshd.exitCode !== null || sshd.signalCode !== null) throw new Error(`sshd exited (${sshd.exitCode ?? sshd.signalCode}):\n${log().slice(-800)}`);
      if (Date.now() > deadline) throw new Error(`sshd not listening on ${port} after 10 s:\n${log().slice(-800)}`);
      await new Promise((r) => setTimeout(r, 50));
    }

    let agentSocket: string | undefined;
    const startAgent = async (): Promise<string> => {
      if (agentSocket) return agentSocket;
      const sock = join(dir, 'agent.sock');
      const agent = track(spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' }));
      children.push(agent);
      const until = Date.now() + 5_000;
      while (!existsSync(sock)) {
        if (agent.exitCode !== null || Date.now() > until) throw new Error('ssh-agent did not start');
        await new Promise((r) => setTimeout(r, 20));
      }
      execFileSync('ssh-add', ['-q', clientKey], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'pipe' });
      agentSocket = sock;
      return sock;
    };

    return {
      host: '127.0.0.1', port, user: 'root', url: `ssh://root@127.0.0.1:${port}`,
      clientKey, knownHosts: join(dir, 'known_hosts'), wrongKnownHosts: join(dir, 'wrong_known_hosts'),
      startAgent, log, stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}
