// A node whose Docker engine is reached as ssh://root@127.0.0.1:<port>: a private dockerd behind a
// throw-away sshd (key-only login; sessions get DOCKER_HOST of the private engine, so the remote
// `docker system dial-stdio` reaches it). The real CLI deploys an app there with the docker
// runtime (runner containers land on that engine with their labels, items flow end to end),
// teardown removes them; the sshd log proves the engine was reached over SSH. Then the failures:
// a password in the ssh URL (exit 2, file:line, hint), an unreachable endpoint, an unknown or
// changed host key, a key the server refuses — each names the endpoint and says what to do.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { isJupiterError, type JupiterError } from '../../config/errors.js';
import type { DockerEndpoint } from '../../config/types.js';
import { dockerOptions } from '../../circe/runtime/docker-engine.js';
import { knownKeysFor, SshDockerAgent, verifyHostKey } from '../../circe/runtime/docker-ssh.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import { freePort } from '../../orchestrator/stack/free-port.js';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import { CliSandbox, writeChainApp } from '../support/faults.js';
import { sshdSkipReason, startTestSshd, type TestSshd } from '../support/sshd.js';
import { parseDeployOutput } from '../e2e/workdir.js';
import { chainApp, dockerCluster } from './fixture.js';

const SECRET = 'Ssh-pw-n0t-4llowed';

function clusterJson(endpoint: string): string {
  return `${JSON.stringify({
    runtime: 'docker',
    docker: { cpus: 0.5, memoryMb: 256 },
    nodes: [
      // The home's engine is the same one (a loopback home would otherwise default to /var/run/docker.sock).
      { name: 'home', host: '127.0.0.1', docker: endpoint },
      { name: 'node1', host: '127.0.0.1', docker: endpoint },
    ],
  }, null, 2)}\n`;
}

async function failure(p: Promise<unknown>): Promise<JupiterError> {
  try {
    await p;
  } catch (e) {
    if (isJupiterError(e)) return e;
    throw e;
  }
  throw new Error('expected a failure');
}

describe('docker runtime: ssh:// endpoint options (no engine needed)', () => {
  it('maps an ssh endpoint to plain HTTP over an SshDockerAgent (port 22 and the local user by default)', () => {
    const o = dockerOptions({ kind: 'ssh', host: 'edge1' }) as Docker.DockerOptions & { agent?: unknown };
    expect(o).to.include({ protocol: 'http', host: 'edge1', port: 22 });
    expect(o.agent).to.be.instanceOf(SshDockerAgent);
    expect((o.agent as SshDockerAgent).toString()).to.equal(`ssh://${userInfo().username}@edge1:22`);
    (o.agent as SshDockerAgent).destroy();
  });
});

describe('docker runtime: a node whose engine is reached over ssh:// (real sshd, real dockerd, real CLI)', function () {
  this.timeout(300_000);
  let engine: TestDockerd | undefined;
  let sshd: TestSshd | undefined;
  let agentSock = '';
  let box: CliSandbox | undefined;
  const app = 'sshchain';

  before(async function () {
    const reason = sshdSkipReason();
    if (reason) {
      console.log(`      skipped: ${reason}`);
      this.skip();
    }
    engine = await startDockerdOrSkip(this);
    try {
      sshd = await startTestSshd({ dockerHost: `unix://${engine.socketPath}` });
      agentSock = await sshd.startAgent();
    } catch (e) {
      console.log(`      skipped: sshd cannot start here: ${(e as Error).message}`);
      await sshd?.stop();
      await engine.stop();
      engine = undefined;
      this.skip();
    }
  });

  after(async () => {
    await box?.dispose(app);
    await sshd?.stop();
    await engine?.stop();
  });

  const sshEnv = (): NodeJS.ProcessEnv => ({ SSH_AUTH_SOCK: agentSock, JUPITER_SSH_KNOWN_HOSTS: (sshd as TestSshd).knownHosts });
  const endpoint = (port = (sshd as TestSshd).port): DockerEndpoint => ({ kind: 'ssh', host: '127.0.0.1', port, username: 'root' });

  it('`jupiter deploy --wait` puts the runner containers on the ssh engine, with their labels, and items flow end to end', async () => {
    const s = sshd as TestSshd;
    box = new CliSandbox('jupiter-ssh-', sshEnv());
    writeFileSync(join(box.cwd, 'jupiter.config.json'), clusterJson(s.url));
    const appDir = writeChainApp(box.cwd, app, { tasks: 2 });
    const t0 = Date.now();
    const r = await box.run(['deploy', appDir, '--wait', '--timeout', '180'], { timeoutMs: 280_000 });
    const ms = Date.now() - t0;
    expect(r.code, `${r.stdout}\n${r.stderr}\n--- sshd\n${s.log().slice(-2000)}`).to.equal(0);
    const out = parseDeployOutput(r.stdout);
    expect(out.placement).to.deep.equal({ t0: 'node1', t1: 'node1' });
    expect(readFileSync(join(out.outputDir, '0s_t1.txt'), 'utf8')).to.equal('sample\nt0\nt1\n');

    // The containers are on the private engine (seen through its own socket, not through ssh).
    const infos = await (engine as TestDockerd).docker.listContainers({ all: true, filters: { label: [`jupiter.app=${app}`] } });
    expect(infos.map((i) => i.Labels['jupiter.task']).sort()).to.deep.equal(['t0', 't1']);
    expect(infos.every((i) => i.Labels['jupiter.node'] === 'node1' && i.State === 'running' && i.Labels['jupiter.run'])).to.equal(true);

    // The CLI could only reach that engine through sshd, logging in with the agent's key.
    const log = s.log();
    expect(log).to.match(/Accepted publickey for root from 127\.0\.0\.1/);
    expect(log).to.include('Starting session: command for root');
    const logins = (log.match(/Accepted publickey for root/g) ?? []).length;
    console.log(`      deploy --wait over ssh: ${(ms / 1000).toFixed(1)} s, ${logins} ssh logins, ${infos.length} containers on the engine`);
  });

  it('`jupiter teardown` removes the containers from the ssh engine', async () => {
    const r = await (box as CliSandbox).run(['teardown', app], { timeoutMs: 120_000 });
    expect(r.code, r.stdout + r.stderr).to.equal(0);
    expect(await (engine as TestDockerd).docker.listContainers({ all: true, filters: { label: [`jupiter.app=${app}`] } })).to.deep.equal([]);
  });

  it('a password in the ssh URL is refused: exit 2 with file:line and a hint, the password never printed', async () => {
    const s = sshd as TestSshd;
    const bad = new CliSandbox('jupiter-sshpw-', sshEnv());
    try {
      writeFileSync(join(bad.cwd, 'jupiter.config.json'), clusterJson(`ssh://root:${SECRET}@127.0.0.1:${s.port}`));
      const appDir = writeChainApp(bad.cwd, 'sshpw', { tasks: 1 });
      const r = await bad.run(['deploy', appDir]);
      expect(r.code, r.stderr).to.equal(2);
      expect(r.stderr).to.match(/jupiter\.config\.json:\d+: docker endpoint of home: no passwords in ssh endpoints/);
      expect(r.stderr).to.match(/hint: .*ssh:\/\/user@host/);
      expect(r.stdout + r.stderr).to.not.include(SECRET);
      expect(existsSync(join(bad.stateDir, 'stack.json'))).to.equal(false);
    } finally {
      await bad.dispose();
    }
  });

  it('an unreachable ssh endpoint: a runtime error naming the node and endpoint, with a hint', async () => {
    const port = await freePort();
    const { app: spec, cleanup } = chainApp('sshgone', 1);
    const cluster = dockerCluster([{ name: 'edge9', endpoint: endpoint(port) }]);
    try {
      const err = await failure(new DockerRuntime().prepare(spec, cluster));
      expect(err.exitCode).to.equal(1);
      expect(err.format()).to.include(`ssh://root@127.0.0.1:${port}`).and.match(/ECONNREFUSED/);
      expect(err.hint).to.include(`ssh -p ${port} root@127.0.0.1 docker version`);
      const report = await new DockerRuntime().teardown('sshgone', cluster);
      expect(report.failed[0]).to.include('edge9').and.include(`ssh://root@127.0.0.1:${port}`);
    } finally {
      cleanup();
    }
  });

  it('checks the host key: unknown or changed keys are refused, naming the endpoint', async () => {
    const s = sshd as TestSshd;
    const empty = join(tmpdir(), `jupiter-empty-known-${process.pid}`);
    writeFileSync(empty, '');
    try {
      const unknown = await failure(new Docker(dockerOptions(endpoint(), { SSH_AUTH_SOCK: agentSock, JUPITER_SSH_KNOWN_HOSTS: empty })).ping());
      expect(unknown.message).to.include(`ssh://root@127.0.0.1:${s.port}`).and.include('not in known_hosts');
      expect(unknown.hint).to.include('ssh-keyscan');
      const changed = await failure(new Docker(dockerOptions(endpoint(), { SSH_AUTH_SOCK: agentSock, JUPITER_SSH_KNOWN_HOSTS: s.wrongKnownHosts })).ping());
      expect(changed.message).to.include('does not match').and.include('refusing');
      expect(changed.hint).to.include('ssh-keygen -R');
    } finally {
      rmSync(empty, { force: true });
    }
    // known_hosts matching: hashed names, [host]:port, negation, @revoked.
    const blob = Buffer.from('key-a');
    const line = (hosts: string, marker = ''): string => `${marker}${hosts} ssh-ed25519 ${blob.toString('base64')}`;
    const hashed = execFileSync('sh', ['-c', `f=$(mktemp); echo '[10.1.2.3]:2222 ssh-ed25519 ${blob.toString('base64')}' > $f; ssh-keygen -H -f $f >/dev/null 2>&1; cat $f; rm -f $f $f.old`]).toString();
    expect(verifyHostKey(knownKeysFor(hashed, '10.1.2.3', 2222), blob)).to.equal('match');
    expect(verifyHostKey(knownKeysFor(hashed, '10.1.2.3', 22), blob)).to.equal('unknown');
    expect(verifyHostKey(knownKeysFor(line('edge*,!edge9'), 'edge1', 22), blob)).to.equal('match');
    expect(verifyHostKey(knownKeysFor(line('edge*,!edge9'), 'edge9', 22), blob)).to.equal('unknown');
    expect(verifyHostKey(knownKeysFor(line('edge1'), 'edge1', 22), Buffer.from('key-b'))).to.equal('changed');
    expect(verifyHostKey(knownKeysFor(`${line('edge1', '@revoked ')}\n${line('edge1')}`, 'edge1', 22), blob)).to.equal('revoked');
  });

  it('logs in with a key file (JUPITER_SSH_KEY) without an agent; a key the server refuses gets a clear error', async () => {
    const s = sshd as TestSshd;
    const withFile = new Docker(dockerOptions(endpoint(), { JUPITER_SSH_KEY: s.clientKey, JUPITER_SSH_KNOWN_HOSTS: s.knownHosts }));
    expect(String(await withFile.ping())).to.equal('OK');
    const other = `${s.clientKey}-other`;
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const refused = await failure(new Docker(dockerOptions(endpoint(), { JUPITER_SSH_KEY: other, JUPITER_SSH_KNOWN_HOSTS: s.knownHosts })).ping());
    expect(refused.message).to.include(`ssh://root@127.0.0.1:${s.port}`).and.include('no key was accepted').and.include(other);
    expect(refused.hint).to.include('authorized_keys');
    const none = await failure(new Docker(dockerOptions(endpoint(), { HOME: '/nonexistent', JUPITER_SSH_KNOWN_HOSTS: s.knownHosts })).ping());
    expect(none.message).to.include('no ssh key');
    const missing = await failure(new Docker(dockerOptions(endpoint(), { JUPITER_SSH_KEY: '/nonexistent/id', JUPITER_SSH_KNOWN_HOSTS: s.knownHosts })).ping());
    expect(missing.exitCode).to.equal(2);
    expect(missing.message).to.include('/nonexistent/id');
  });

  it('many parallel API calls share a few ssh connections (sshd MaxStartups is not hit)', async () => {
    const s = sshd as TestSshd;
    const before = (s.log().match(/Accepted publickey for root/g) ?? []).length;
    const docker = new Docker(dockerOptions(endpoint(), sshEnv()));
    // More at once than sshd's default MaxStartups (10) lets start up together; each call over
    // ssh costs ~2 s here, so not many more (24 took 55 s of the suite's time).
    const pings = await Promise.all(Array.from({ length: 12 }, () => docker.ping()));
    expect(pings.map(String)).to.deep.equal(Array(12).fill('OK'));
    const logins = (s.log().match(/Accepted publickey for root/g) ?? []).length - before;
    console.log(`      12 parallel API calls over ${logins} ssh connections`);
    expect(logins).to.be.at.most(3);
  });
});
