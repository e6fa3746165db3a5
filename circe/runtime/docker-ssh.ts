// Docker engines reached as ssh://user@host[:port]: an http.Agent whose connections are channels
// running `docker system dial-stdio` on the remote machine (what `docker -H ssh://` does).
// Why not docker-modem's own ssh transport: it opens a new SSH connection per API request (bursts
// of parallel requests hit sshd's MaxStartups and get dropped), accepts any host key (no
// known_hosts check) and reports failures as bare socket errors. Here one SSH connection carries
// up to MAX_CHANNELS requests, more connections open as needed, idle ones close by themselves
// and never keep the process alive; the host key must be in known_hosts; every failure names
// the endpoint and says what to do. A channel (one dial-stdio process on the remote machine, one
// HTTP connection to its dockerd) serves request after request (HTTP keep-alive): starting
// dial-stdio costs the remote a docker CLI start per channel, and a deploy makes hundreds of API
// calls. Idle channels go with their SSH connection.
// Keys: the ssh agent (SSH_AUTH_SOCK), then JUPITER_SSH_KEY (a private key file) or else the
// default ~/.ssh/id_ed25519, id_ecdsa, id_rsa. Host keys: JUPITER_SSH_KNOWN_HOSTS (a file) or else
// ~/.ssh/known_hosts and /etc/ssh/ssh_known_hosts. Passwords are never used.
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { createRequire } from 'node:module';
import type ssh2 from 'ssh2';
import type { AnyAuthMethod, ClientChannel } from 'ssh2';
import { inputError, runtimeError, type JupiterError } from '../../config/errors.js';

const require = createRequire(import.meta.url);
let ssh2Module: typeof ssh2 | undefined;
/** ssh2 on first use: only ssh:// engines need it, and every process that can reach an engine imports this file (~30 ms). */
function loadSsh2(): typeof ssh2 {
  ssh2Module ??= require('ssh2') as typeof ssh2;
  return ssh2Module;
}

/** sshd's default MaxSessions is 10: stay below it on each connection. */
const MAX_CHANNELS = 8;
const IDLE_CLOSE_MS = 2_000;
const CONNECT_TIMEOUT_MS = 20_000;

export interface SshTarget {
  host: string;
  port: number;
  username: string;
}

export function sshUrl(t: SshTarget): string {
  return `ssh://${t.username}@${t.host}:${t.port}`;
}

// ---- known_hosts ----

export type HostKeyVerdict = 'match' | 'unknown' | 'changed' | 'revoked';

/** `host` for port 22, else `[host]:port` (how OpenSSH writes known_hosts entries). */
function knownHostName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function globMatch(pattern: string, name: string): boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`, 'i');
  return re.test(name);
}

function hostFieldMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) {
    const [, , salt, hash] = field.split('|');
    if (!salt || !hash) return false;
    return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash;
  }
  let positive = false;
  for (const p of field.split(',')) {
    if (p.startsWith('!')) {
      if (globMatch(p.slice(1), name)) return false;
    } else if (globMatch(p, name)) {
      positive = true;
    }
  }
  return positive;
}

interface KnownKey { type: string; blob: Buffer; revoked: boolean }

/** Keys that known_hosts text lists for host:port (@cert-authority lines are not supported: skipped). */
export function knownKeysFor(text: string, host: string, port: number): KnownKey[] {
  const name = knownHostName(host, port);
  const keys: KnownKey[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    let marker: string | undefined;
    if (fields[0]?.startsWith('@')) marker = fields.shift();
    const [hosts, type, b64] = fields;
    if (!hosts || !type || !b64 || marker === '@cert-authority') continue;
    if (hostFieldMatches(hosts, name)) keys.push({ type, blob: Buffer.from(b64, 'base64'), revoked: marker === '@revoked' });
  }
  return keys;
}

export function verifyHostKey(keys: KnownKey[], presented: Buffer): HostKeyVerdict {
  if (keys.some((k) => k.revoked && k.blob.equals(presented))) return 'revoked';
  const trusted = keys.filter((k) => !k.revoked);
  if (trusted.length === 0) return 'unknown';
  return trusted.some((k) => k.blob.equals(presented)) ? 'match' : 'changed';
}

function sshDir(env: NodeJS.ProcessEnv): string {
  return join(env.HOME || homedir(), '.ssh');
}

function knownHostsFiles(env: NodeJS.ProcessEnv): string[] {
  if (env.JUPITER_SSH_KNOWN_HOSTS) return [env.JUPITER_SSH_KNOWN_HOSTS];
  return [join(sshDir(env), 'known_hosts'), '/etc/ssh/ssh_known_hosts'];
}

function readKnownKeys(files: string[], t: SshTarget): KnownKey[] {
  return files.flatMap((f) => {
    try {
      return knownKeysFor(readFileSync(f, 'utf8'), t.host, t.port);
    } catch {
      return [];
    }
  });
}

/** Host key algorithms to ask for: those known_hosts has for this host, so the server offers one we can check. */
function hostKeyAlgorithms(keys: KnownKey[]): string[] | undefined {
  const algos = new Set<string>();
  for (const k of keys) {
    if (k.revoked) continue;
    if (k.type === 'ssh-rsa') ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'].forEach((a) => algos.add(a));
    else algos.add(k.type);
  }
  return algos.size ? [...algos] : undefined;
}

// ---- keys ----

interface Credentials { methods: AnyAuthMethod[]; tried: string[] }

function credentials(t: SshTarget, env: NodeJS.ProcessEnv): Credentials {
  const methods: AnyAuthMethod[] = [];
  const tried: string[] = [];
  if (env.SSH_AUTH_SOCK) {
    methods.push({ type: 'agent', username: t.username, agent: env.SSH_AUTH_SOCK });
    tried.push('the ssh agent (SSH_AUTH_SOCK)');
  }
  const explicit = env.JUPITER_SSH_KEY;
  const files = explicit ? [explicit] : ['id_ed25519', 'id_ecdsa', 'id_rsa'].map((f) => join(sshDir(env), f)).filter((f) => existsSync(f));
  for (const file of files) {
    let text: Buffer;
    try {
      text = readFileSync(file);
    } catch (e) {
      throw inputError(`JUPITER_SSH_KEY names a key file that cannot be read: ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, {
        hint: 'set JUPITER_SSH_KEY to the private key file (e.g. ~/.ssh/id_ed25519), or unset it to use the ssh agent',
      });
    }
    const parsed = loadSsh2().utils.parseKey(text);
    if (parsed instanceof Error || !parsed.isPrivateKey()) {
      const why = parsed instanceof Error && /passphrase|encrypted/i.test(parsed.message) ? 'is protected by a passphrase' : 'is not a private key Jupiter can read';
      if (explicit) {
        throw inputError(`JUPITER_SSH_KEY ${file} ${why}`, { hint: 'load the key into ssh-agent (`ssh-add <file>`) and unset JUPITER_SSH_KEY; Jupiter never asks for passphrases' });
      }
      tried.push(`${file} (skipped: ${why}; load it with ssh-add)`);
      continue;
    }
    methods.push({ type: 'publickey', username: t.username, key: text });
    tried.push(file);
  }
  return { methods, tried };
}

// ---- connections ----

interface Conn {
  client: ssh2.Client;
  sock: Socket;
  ready: Promise<void>;
  /** Open channels (sshd's MaxSessions counts them, idle or not). */
  channels: number;
  /** Channels serving a request now: while any does, the connection keeps the process alive. */
  active: number;
  /** The open channels themselves: marked destroyed at once when the connection goes. */
  open: Set<ClientChannel>;
  dead: boolean;
  idle?: NodeJS.Timeout;
}

/** A channel's connection and whether it serves a request now (or sits in the agent's free pool). */
interface ChannelState {
  conn: Conn;
  active: boolean;
}

/** An http.Agent that sends each Docker API request over an SSH channel running dial-stdio. */
export class SshDockerAgent extends Agent {
  private readonly target: SshTarget;
  private readonly env: NodeJS.ProcessEnv;
  private readonly conns = new Set<Conn>();
  private readonly states = new WeakMap<object, ChannelState>();

  constructor(target: SshTarget, env: NodeJS.ProcessEnv = process.env) {
    super({ keepAlive: true });
    this.target = target;
    this.env = env;
  }

  // http.Agent calls this for every request; answering through the callback is allowed.
  override createConnection(_options: unknown, cb: (err: Error | null, stream?: Duplex) => void): undefined {
    this.channel().then((ch) => cb(null, ch), (err: Error) => cb(err));
    return undefined;
  }

  // http.Agent (keepAlive) calls this when a response has ended: the channel goes to its free
  // pool. (Its own version sets TCP options a channel does not have.) A pooled channel taking a
  // new request is ref()ed by http.Agent's reuseSocket (see channel()).
  override keepSocketAlive(socket: Duplex): boolean {
    const st = this.states.get(socket);
    if (!st || st.conn.dead) return false;
    this.setActive(st, false);
    return true;
  }

  /** The endpoint (no secrets: ssh URLs never hold passwords). */
  override toString(): string {
    return sshUrl(this.target);
  }

  override destroy(): void {
    for (const c of this.conns) this.drop(c);
    super.destroy();
  }

  private fail(msg: string, hint: string, cause?: unknown): JupiterError {
    return runtimeError(`Docker engine at ${sshUrl(this.target)}: ${msg}`, { hint }, cause);
  }

  private drop(c: Conn): void {
    c.dead = true;
    clearTimeout(c.idle);
    this.conns.delete(c);
    // Destroyed now, so that http.Agent skips them in its free pool (their close events come later).
    for (const ch of c.open) ch.destroy();
    c.client.end();
    c.sock.destroy();
  }

  private open(): Conn {
    const t = this.target;
    const creds = credentials(t, this.env);
    const tryHint = `try \`ssh -p ${t.port} ${t.username}@${t.host} docker version\` from this machine`;
    const files = knownHostsFiles(this.env);
    const known = readKnownKeys(files, t);
    let verdict: HostKeyVerdict | undefined;
    const client = new (loadSsh2().Client)();
    const sock = connect({ host: t.host, port: t.port });
    sock.setTimeout(CONNECT_TIMEOUT_MS, () => sock.destroy(new Error(`no answer within ${CONNECT_TIMEOUT_MS / 1000} s`)));
    sock.once('connect', () => sock.setTimeout(0));
    const c: Conn = { client, sock, ready: Promise.resolve(), channels: 0, active: 0, open: new Set(), dead: false };
    c.ready = new Promise<void>((resolve, reject) => {
      let connected = false;
      sock.once('connect', () => { connected = true; });
      client.once('ready', () => resolve());
      client.on('error', (err: Error & { level?: string }) => {
        c.dead = true;
        this.conns.delete(c);
        if (verdict === 'unknown') {
          reject(this.fail(`the host key of ${t.host}:${t.port} is not in known_hosts (${files.join(', ')})`,
            `check the machine is the right one, then record its key: \`ssh -p ${t.port} ${t.username}@${t.host} true\` once, or \`ssh-keyscan -p ${t.port} ${t.host} >> ~/.ssh/known_hosts\` (JUPITER_SSH_KNOWN_HOSTS names another file)`));
        } else if (verdict === 'changed' || verdict === 'revoked') {
          reject(this.fail(`the host key of ${t.host}:${t.port} ${verdict === 'revoked' ? 'is marked @revoked' : 'does not match the one in known_hosts'}: someone may be intercepting the connection; refusing`,
            `if the machine was reinstalled, remove its old entry (\`ssh-keygen -R "${t.port === 22 ? t.host : `[${t.host}]:${t.port}`}"\`) and record the new key`));
        } else if (err.level === 'client-authentication') {
          reject(creds.methods.length === 0
            ? this.fail(`no ssh key to log in as ${t.username} with (no ssh agent: SSH_AUTH_SOCK is unset; no JUPITER_SSH_KEY; no usable ~/.ssh/id_ed25519, id_ecdsa or id_rsa)`,
              'start ssh-agent and `ssh-add` your key, or set JUPITER_SSH_KEY to a private key file (passwords are not supported)', err)
            : this.fail(`ssh login as ${t.username} refused: no key was accepted (tried ${creds.tried.join(', ')})`,
              `put your public key in ~${t.username}/.ssh/authorized_keys on ${t.host}, and load the private key into ssh-agent or set JUPITER_SSH_KEY; ${tryHint}`, err));
        } else if (!connected) {
          reject(this.fail(`cannot connect over ssh: ${err.message}`, `is sshd running on ${t.host} and listening on port ${t.port}? ${tryHint}`, err));
        } else {
          reject(this.fail(`ssh connection failed: ${err.message}`, tryHint, err));
        }
      });
      client.on('close', () => {
        c.dead = true;
        this.conns.delete(c);
        reject(this.fail('the ssh connection closed during the handshake', tryHint));
      });
    });
    // Later failures surface on the channels; never as an unhandled rejection.
    c.ready.catch(() => undefined);
    client.connect({
      sock,
      username: t.username,
      readyTimeout: CONNECT_TIMEOUT_MS,
      authHandler: [...creds.methods],
      hostVerifier: (key: Buffer) => {
        verdict = verifyHostKey(known, key);
        return verdict === 'match';
      },
      ...(hostKeyAlgorithms(known) ? { algorithms: { serverHostKey: hostKeyAlgorithms(known) as never } } : {}),
    });
    this.conns.add(c);
    return c;
  }

  /** A channel starts or stops serving a request; a connection none serves hangs up soon. */
  private setActive(st: ChannelState, active: boolean): void {
    if (st.active === active) return;
    st.active = active;
    const c = st.conn;
    if (active) {
      c.active++;
      clearTimeout(c.idle);
      c.sock.ref();
      return;
    }
    c.active--;
    if (c.active > 0 || c.dead) return;
    // Idle: let the process exit, and hang up soon (with the pooled channels) unless a request comes.
    c.sock.unref();
    c.idle = setTimeout(() => this.drop(c), IDLE_CLOSE_MS);
    c.idle.unref();
  }

  private async channel(): Promise<ClientChannel> {
    let c = [...this.conns].find((x) => !x.dead && x.channels < MAX_CHANNELS);
    if (!c) c = this.open();
    c.channels++;
    const st: ChannelState = { conn: c, active: false };
    this.setActive(st, true);
    const release = (): void => {
      c.channels--;
      this.setActive(st, false);
    };
    try {
      await c.ready;
    } catch (e) {
      release();
      throw e;
    }
    return new Promise<ClientChannel>((resolve, reject) => {
      c.client.exec('docker system dial-stdio', (err, ch) => {
        if (err) {
          release();
          return reject(this.fail(`cannot start \`docker system dial-stdio\` over ssh: ${err.message}`, 'the server may limit sessions per connection (sshd MaxSessions)', err));
        }
        let stderr = '';
        ch.stderr.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-2000); });
        ch.once('exit', (code: number | null) => {
          // Failing before the HTTP exchange: tell the request why (nobody listens afterwards).
          if (code && ch.listenerCount('error') > 0) {
            ch.emit('error', this.fail(`\`docker system dial-stdio\` exited with ${code} on ${this.target.host}: ${stderr.trim() || 'no message'}`,
              `the remote machine needs the docker CLI on its PATH and ${this.target.username} needs access to dockerd there (docker group, or DOCKER_HOST in its environment)`));
          }
        });
        c.open.add(ch);
        ch.once('close', () => {
          c.open.delete(ch);
          release();
        });
        this.states.set(ch, st);
        // What http.Agent calls on a socket it takes from or puts in its pool: here, whether the
        // channel serves a request (and so keeps the process alive).
        resolve(Object.assign(ch, {
          ref: () => { this.setActive(st, true); return ch; },
          unref: () => { this.setActive(st, false); return ch; },
        }));
      });
    });
  }
}
