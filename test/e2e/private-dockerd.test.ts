// A fresh machine with docker.io installed but no engine running: `jupiter deploy dummy --runtime
// docker --wait` starts a private dockerd in the embedded stack (socket, data-root, exec-root under
// .jupiter/docker), builds the base image into it and runs the containers there; the commands the
// deploy prints work exactly as printed (with `jupiter` on the PATH as set-up puts it), and
// `teardown --stack` removes the containers, stops the engine and deletes its folder.
// Without root or dockerd the stack says why and how to fix it (run as the user nobody).
import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { cliPath } from '../support/paths.js';
import { isAlive } from '../../circe/runtime/pid.js';
import { privateEngineBlocker } from '../../orchestrator/stack/dockerd.js';
import { WorkDir } from './workdir.js';

async function defaultEngineAnswers(): Promise<boolean> {
  if (!existsSync('/var/run/docker.sock')) return false;
  try {
    await new Docker({ socketPath: '/var/run/docker.sock' }).ping();
    return true;
  } catch {
    return false;
  }
}

/** Run a printed command line through sh, with `jupiter` on the PATH as scripts/setup.sh links it. */
function runAsPrinted(line: string, cwd: string, binDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', line], { cwd, env: { ...process.env, PATH: `${binDir}:${process.env.PATH}`, NO_COLOR: '1' }, timeout: 120_000 }, (e, stdout, stderr) =>
      resolve({ code: (e as { code?: number } | null)?.code ?? 0, stdout, stderr }));
  });
}

describe('e2e: deploy --runtime docker with no engine running starts a private dockerd', function () {
  this.timeout(240_000);
  const w = new WorkDir();
  const binDir = mkdtempSync(join(tmpdir(), 'jupiter-bin-'));
  symlinkSync(cliPath, join(binDir, 'jupiter'));
  after(async () => {
    await w.dispose(['dummy']);
    rmSync(binDir, { recursive: true, force: true });
  });

  before(async function () {
    const blocker = privateEngineBlocker();
    if (blocker) {
      console.log(`      (skipped: ${blocker})`);
      this.skip();
    }
    if (await defaultEngineAnswers()) {
      console.log('      (skipped: an engine answers at /var/run/docker.sock, so no private one would start)');
      this.skip();
    }
  });

  it('deploys, runs status and teardown --stack as printed, and leaves no engine, container or folder behind', async () => {
    const dep = await w.expectCli(['deploy', 'dummy', '--runtime', 'docker', '--wait'], 0, 200_000);
    expect(dep.stderr).to.match(/Starting private Docker engine — unix:\/\/.*\.jupiter\/docker\/docker\.sock/);
    expect(dep.stderr).to.include('Creating the base image in the private engine');
    const stack = JSON.parse(readFileSync(join(w.stateDir, 'stack.json'), 'utf8')) as { dockerd?: { pid: number; socket: string } };
    const engine = stack.dockerd!;
    expect(engine.socket).to.equal(join(w.stateDir, 'docker', 'docker.sock'));
    expect(isAlive(engine.pid)).to.equal(true);
    const docker = new Docker({ socketPath: engine.socket });
    const containers = await docker.listContainers({ all: true, filters: { label: ['jupiter.app=dummy'] } });
    expect(containers.length).to.equal(7);

    // The commands the deploy printed, exactly as printed.
    const printed = (label: string): string => {
      const m = new RegExp(`^${label}:\\s+(jupiter [^\\n]*?)(\\s{3}\\(.*)?$`, 'm').exec(dep.stdout);
      if (!m) throw new Error(`no "${label}:" line in\n${dep.stdout}`);
      return m[1]!;
    };
    expect(printed('status')).to.equal('jupiter status dummy');
    const status = await runAsPrinted(printed('status'), w.dir, binDir);
    expect(status.code, status.stderr).to.equal(0);
    const st = await runAsPrinted('jupiter stack status', w.dir, binDir);
    expect(st.stdout).to.match(/dockerd\s+│\s+\d+\s+│\s+running/);

    expect(printed('stop all')).to.equal('jupiter teardown dummy --stack');
    const down = await runAsPrinted(printed('stop all'), w.dir, binDir);
    expect(down.code, down.stderr).to.equal(0);
    expect(down.stdout).to.match(/removed container jupiter-dummy-task0 .* on unix:\/\/.*\.jupiter\/docker\/docker\.sock/);
    expect(down.stdout).to.include(`stopped dockerd (pid ${engine.pid})`);
    for (let i = 0; i < 50 && isAlive(engine.pid); i++) await new Promise((r) => setTimeout(r, 100));
    expect(isAlive(engine.pid)).to.equal(false);
    expect(existsSync(join(w.stateDir, 'docker'))).to.equal(false);
    expect(readFileSync('/proc/self/mounts', 'utf8')).not.to.include(w.dir);
  });
});

describe('e2e: without root, the docker runtime says why no engine can start and how to fix it', function () {
  this.timeout(60_000);
  let dir = '';
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('stack up with JUPITER_RUNTIME=docker as the user nobody exits 1 naming root and the fixes', async function () {
    if (process.getuid?.() !== 0) this.skip(); // needs root to switch to nobody
    if (await defaultEngineAnswers()) this.skip();
    dir = mkdtempSync(join(tmpdir(), 'jupiter-nobody-'));
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'w'));
    chownSync(join(dir, 'w'), 65534, 65534);
    const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, [cliPath, 'stack', 'up'], {
        cwd: join(dir, 'w'), uid: 65534, gid: 65534, timeout: 50_000,
        env: { PATH: process.env.PATH, HOME: join(dir, 'w'), JUPITER_RUNTIME: 'docker', NO_COLOR: '1' },
      }, (e, _o, stderr) => resolve({ code: (e as { code?: number } | null)?.code ?? 0, stderr }));
    });
    try {
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.include('no Docker engine answers at unix:///var/run/docker.sock').and.include('needs root');
      expect(r.stderr).to.include('DOCKER_HOST').and.include('sudo dockerd');
    } finally {
      // stack down as the same user stops what stack up started before the engine check
      execFileSync(process.execPath, [cliPath, 'stack', 'down'], { cwd: join(dir, 'w'), uid: 65534, gid: 65534, env: { PATH: process.env.PATH, HOME: join(dir, 'w') }, stdio: 'ignore' });
    }
  });
});
