// The docker runtime against a real dockerd: base image, app image, and the container sandbox
// (uid 10001, no capabilities, read-only root, limits, labels, no secrets outside the environment).
import { expect } from 'chai';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { DEFAULT_BASE_IMAGE, ensureBaseImage } from '../../circe/runtime/docker-base.js';
import { ensureAppImage } from '../../circe/runtime/docker-image.js';
import { DockerRuntime } from '../../circe/runtime/docker.js';
import { chainApp, dockerCluster, specsFor } from './fixture.js';

async function waitExit(docker: Docker, id: string): Promise<number> {
  const r = (await docker.getContainer(id).wait()) as { StatusCode: number };
  return r.StatusCode;
}

/** Runs inside the container: reports who it is and what it may do. */
const PROBE = `
const fs = require('fs'), cp = require('child_process');
const status = fs.readFileSync('/proc/self/status', 'utf8');
const field = (k) => (status.match(new RegExp(k + ':\\\\s*(\\\\S+)')) || [])[1];
const tryWrite = (p) => { try { fs.writeFileSync(p, 'x'); return 'ok'; } catch (e) { return e.code; } };
const py = cp.execFileSync('python3', ['-c', 'import sys, json, os; print(json.dumps([sys.version.split()[0], os.getuid()]))']).toString();
console.log(JSON.stringify({
  uid: process.getuid(), gid: process.getgid(), capEff: field('CapEff'), noNewPrivs: field('NoNewPrivs'),
  root: tryWrite('/jupiter/x'), etc: tryWrite('/etc/passwd'), work: tryWrite('/jupiter/work/x'), tmp: tryWrite('/tmp/x'),
  python: JSON.parse(py), cwd: process.cwd(), home: process.env.HOME, task: process.env.JUPITER_TASK,
}));
console.error('url ' + process.env.JUPITER_REDIS_URL);
`;

describe('docker runtime: images and the container sandbox (real dockerd)', function () {
  this.timeout(180_000);
  let engine: TestDockerd | undefined;
  const cleanups: Array<() => void | Promise<void>> = [];

  before(async function () {
    engine = await startDockerdOrSkip(this, { bridge: true, tls: true, seedImages: false });
  });

  after(async () => {
    for (const c of cleanups.reverse()) await c();
    await engine?.stop();
  });

  it('creates the base image from this machine\'s node and python3 once (idempotent)', async () => {
    const docker = (engine as TestDockerd).docker;
    const first = await ensureBaseImage(docker);
    console.log(`      base image: ${first.created ? `created in ${first.seconds.toFixed(2)} s, ${(first.bytes / 1e6).toFixed(0)} MB of files` : 'present'}; node ${first.node}, python ${first.python}`);
    const t0 = Date.now();
    const second = await ensureBaseImage(docker);
    expect(second.created).to.equal(false);
    console.log(`      second call (exists): ${Date.now() - t0} ms`);
    const info = await docker.getImage(DEFAULT_BASE_IMAGE).inspect();
    expect(info.Config.User).to.equal('10001:10001');
    expect(info.Config.Labels).to.include({ 'jupiter.base.node': process.version });
  });

  it('builds the app image through the engine API and reuses it until the app changes', async () => {
    const docker = (engine as TestDockerd).docker;
    const { app, cleanup } = chainApp('imgapp', 2);
    cleanups.push(cleanup);
    const progress: string[] = [];
    let t0 = Date.now();
    const first = await ensureAppImage(docker, app, DEFAULT_BASE_IMAGE, (m) => progress.push(m));
    const cold = Date.now() - t0;
    expect(first.built.some((b) => b.startsWith('jupiter/deps:'))).to.equal(true);
    expect(progress.some((m) => /Step \d+\/\d+/.test(m))).to.equal(true);
    t0 = Date.now();
    const again = await ensureAppImage(docker, app, DEFAULT_BASE_IMAGE);
    const cached = Date.now() - t0;
    expect(again.tag).to.equal(first.tag);
    expect(again.built).to.deep.equal([]);
    appendFileSync(join(app.dir, 'scripts', 'task0.py'), '# changed\n');
    t0 = Date.now();
    const changed = await ensureAppImage(docker, app, DEFAULT_BASE_IMAGE);
    const appOnly = Date.now() - t0;
    expect(changed.tag).to.not.equal(first.tag);
    expect(changed.built).to.deep.equal([changed.tag]);
    console.log(`      app image: cold (deps + app) ${cold} ms, cached ${cached} ms, app changed ${appOnly} ms`);
  });

  it('runs a task container as uid 10001 with all capabilities dropped and a read-only root filesystem', async () => {
    const e = engine as TestDockerd;
    const { app, cleanup } = chainApp('sandbox', 1);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'n1', endpoint: e.endpoint }]);
    const rt = new DockerRuntime({ overrides: { cmd: ['node', '-e', PROBE] } });
    cleanups.push(async () => void (await rt.teardown(app.name, cluster)));
    await rt.prepare(app, cluster);
    const [h] = await rt.start(app, specsFor(app, { task0: 'n1' }, 'redis://:s3cret@127.0.0.1:6379'), cluster);
    expect(await waitExit(e.docker, (h as { id: string }).id)).to.equal(0);
    const logs = await rt.logs(app.name, 'task0', cluster);
    const report = JSON.parse(logs.split('\n').find((l) => l.startsWith('{')) as string) as Record<string, unknown>;
    expect(report).to.include({ uid: 10001, gid: 10001, capEff: '0000000000000000', noNewPrivs: '1' });
    expect(report).to.include({ root: 'EROFS', etc: 'EROFS', work: 'ok', tmp: 'ok', cwd: '/jupiter/work', home: '/jupiter/work', task: 'task0' });
    expect((report.python as unknown[])[1]).to.equal(10001);
    // The password reaches the runner's environment but the logs we hand out are masked.
    expect(logs).to.include('url redis://:***@127.0.0.1:6379');
    expect(logs).to.not.include('s3cret');
  });

  it('labels containers, applies CPU and memory limits and keeps the Redis password out of labels', async () => {
    const e = engine as TestDockerd;
    const { app, cleanup } = chainApp('limits', 2);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'n1', endpoint: e.endpoint }], { cpus: 0.5, memoryMb: 200 });
    const rt = new DockerRuntime({ overrides: { cmd: ['node', '-e', 'setInterval(() => {}, 1e6)'] } });
    cleanups.push(async () => void (await rt.teardown(app.name, cluster)));
    const specs = specsFor(app, { task0: 'n1', task1: 'n1' }, 'redis://:s3cret@127.0.0.1:6379', 'run-42');
    const handles = await rt.start(app, specs, cluster);
    expect(handles.map((h) => h.task).sort()).to.deep.equal(['task0', 'task1']);
    const info = await e.docker.getContainer((handles[0] as { id: string }).id).inspect();
    expect(info.Config.Labels).to.include({ 'jupiter.app': 'limits', 'jupiter.task': handles[0]?.task, 'jupiter.node': 'n1', 'jupiter.run': 'run-42' });
    expect(JSON.stringify(info.Config.Labels)).to.not.include('s3cret');
    expect(info.Config.User).to.equal('10001:10001');
    expect(info.HostConfig).to.include({ NanoCpus: 500_000_000, Memory: 200 * 1024 * 1024, ReadonlyRootfs: true, NetworkMode: 'host' });
    expect(info.HostConfig.CapDrop).to.deep.equal(['ALL']);
    expect(info.HostConfig.SecurityOpt).to.deep.equal(['no-new-privileges']);
    expect(info.HostConfig.RestartPolicy?.Name).to.equal('on-failure');
    expect(info.Config.Env).to.include('JUPITER_REDIS_URL=redis://:s3cret@127.0.0.1:6379');
    expect(info.Config.Env).to.include.members(['JUPITER_APP=limits', 'JUPITER_APP_DIR=/jupiter/apps/limits', 'JUPITER_NODE=n1', 'JUPITER_RUN_ID=run-42', 'JUPITER_REDIS_PREFIX=jupitertest:']);
    expect((await rt.list(app.name, cluster)).length).to.equal(2);
    // Starting again with the same run is idempotent: same containers.
    const again = await rt.start(app, specs, cluster);
    expect(again.map((h) => h.id).sort()).to.deep.equal(handles.map((h) => h.id).sort());
  });

  it('restarts a runner that crashes (restart policy on-failure)', async () => {
    const e = engine as TestDockerd;
    const { app, cleanup } = chainApp('crashy', 1);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'n1', endpoint: e.endpoint }]);
    const rt = new DockerRuntime({ overrides: { cmd: ['node', '-e', 'console.log("up"); setTimeout(() => process.exit(3), 200)'] } });
    cleanups.push(async () => void (await rt.teardown(app.name, cluster)));
    const [h] = await rt.start(app, specsFor(app, { task0: 'n1' }, 'redis://127.0.0.1:6379'), cluster);
    const deadline = Date.now() + 15_000;
    let restarts = 0;
    while (Date.now() < deadline && restarts < 2) {
      restarts = (await e.docker.getContainer((h as { id: string }).id).inspect()).RestartCount;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(restarts).to.be.at.least(2);
  });

  it('the node\'s data volume (direct path store) is the runner\'s own, survives a restart, and goes at teardown', async () => {
    const e = engine as TestDockerd;
    const { app, cleanup } = chainApp('datavol', 1);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'n1', endpoint: e.endpoint }]);
    // Counts its starts in the store; the first start crashes (the restart policy brings it back).
    const probe = `
      const fs = require('fs'), f = process.env.JUPITER_DATA_DIR + '/starts', tmp = '/tmp/starts';
      const n = fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8')) + 1 : 1;
      fs.writeFileSync(f, String(n));
      const t = fs.existsSync(tmp) ? Number(fs.readFileSync(tmp, 'utf8')) + 1 : 1;
      fs.writeFileSync(tmp, String(t));
      const st = fs.statSync(process.env.JUPITER_DATA_DIR);
      console.log(JSON.stringify({ starts: n, tmpStarts: t, uid: st.uid, mode: (st.mode & 0o777).toString(8) }));
      if (n === 1) process.exit(3);`;
    const rt = new DockerRuntime({ overrides: { cmd: ['node', '-e', probe] } });
    const [h] = await rt.start(app, specsFor(app, { task0: 'n1' }, 'redis://127.0.0.1:6379'), cluster);
    expect(await waitExit(e.docker, (h as { id: string }).id)).to.be.oneOf([0, 3]);
    const deadline = Date.now() + 15_000;
    let lines: Array<{ starts: number; tmpStarts: number; uid: number; mode: string }> = [];
    while (Date.now() < deadline && lines.length < 2) {
      lines = (await rt.logs(app.name, 'task0', cluster)).split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      await new Promise((r) => setTimeout(r, 200));
    }
    // /tmp starts empty again; the data volume keeps what the first start wrote.
    expect(lines).to.deep.equal([{ starts: 1, tmpStarts: 1, uid: 10001, mode: '700' }, { starts: 2, tmpStarts: 1, uid: 10001, mode: '700' }]);
    const label = { filters: { label: ['jupiter.app=datavol'] } };
    expect(((await e.docker.listVolumes(label)).Volumes ?? []).map((v) => v.Name)).to.deep.equal(['jupiter-data-datavol-n1']);
    const report = await rt.teardown(app.name, cluster);
    expect(report.removed.some((r) => r.startsWith('volume jupiter-data-datavol-n1 (node n1)'))).to.equal(true);
    expect((await e.docker.listVolumes(label)).Volumes ?? []).to.deep.equal([]);
  });

  it('bridge networking: a container reaches a host Redis through host.docker.internal', async function () {
    const e = engine as TestDockerd;
    if (!e.bridgeGateway) {
      console.log('      skipped: no bridge could be created for the test engine');
      this.skip();
    }
    // RedisServer's url names its bind address, so bind all (password-protected) and hand the
    // runtime a loopback URL, which it must rewrite to host.docker.internal.
    const dir = mkdtempSync(join(tmpdir(), 'jupiter-redis-br-'));
    const password = 'br1dge-pw';
    const server = await new RedisServer({ dir, bind: '0.0.0.0', password }).start();
    cleanups.push(async () => { await server.stop(); rmSync(dir, { recursive: true, force: true }); });
    const { app, cleanup } = chainApp('bridged', 1);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'n1', endpoint: e.endpoint }], { network: 'bridge' });
    const ping = `
      const u = new URL(process.env.JUPITER_REDIS_URL);
      let got = '';
      const s = require('net').connect(Number(u.port), u.hostname, () => s.write('AUTH ' + decodeURIComponent(u.password) + '\\r\\nPING\\r\\n'));
      s.on('data', (d) => { got += d; if (got.includes('PONG') || got.includes('ERR')) { console.log(u.hostname + ' ' + got.replace(/\\r\\n/g, ' ').trim()); process.exit(0); } });
      s.on('error', (err) => { console.log('error ' + err.message); process.exit(0); });`;
    const rt = new DockerRuntime({ overrides: { cmd: ['node', '-e', ping] } });
    cleanups.push(async () => void (await rt.teardown(app.name, cluster)));
    const [h] = await rt.start(app, specsFor(app, { task0: 'n1' }, `redis://:${password}@127.0.0.1:${server.port}`), cluster);
    await waitExit(e.docker, (h as { id: string }).id);
    const logs = await rt.logs(app.name, 'task0', cluster);
    expect(logs.trim()).to.equal('host.docker.internal +OK +PONG');
  });

  it('reaches an engine over tcp with TLS certificate files', async function () {
    const e = engine as TestDockerd;
    if (!e.tlsEndpoint) {
      console.log('      skipped: openssl is not installed');
      this.skip();
    }
    const { app, cleanup } = chainApp('overtls', 1);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'tlsnode', endpoint: e.tlsEndpoint as NonNullable<TestDockerd['tlsEndpoint']> }]);
    const rt = new DockerRuntime({ overrides: { cmd: ['node', '-e', 'console.log("over tls")'] } });
    const [h] = await rt.start(app, specsFor(app, { task0: 'tlsnode' }, 'redis://127.0.0.1:6379'), cluster);
    expect(await waitExit(e.docker, (h as { id: string }).id)).to.equal(0);
    expect(await rt.logs(app.name, 'task0', cluster)).to.equal('over tls\n');
    const report = await rt.teardown(app.name, cluster);
    expect(report.removed.filter((r) => r.startsWith('container'))).to.have.length(1);
    expect(report.removed[0]).to.include(`tcp+tls://127.0.0.1:${(e.tlsEndpoint as { port: number }).port}`);
    // Without the client certificate the engine refuses us.
    const noCert = dockerCluster([{ name: 'tlsnode', endpoint: { ...(e.tlsEndpoint as object), tls: { ca: (e.tlsEndpoint as { tls: { ca: string } }).tls.ca } } as never }]);
    const refused = await new DockerRuntime().list(app.name, noCert);
    expect(refused).to.deep.equal([]);
  });

  it('teardown removes every container of the app (and its images when asked) and reports it', async () => {
    const e = engine as TestDockerd;
    const { app, cleanup } = chainApp('gone', 3);
    cleanups.push(cleanup);
    const cluster = dockerCluster([{ name: 'n1', endpoint: e.endpoint }]);
    const rt = new DockerRuntime({ removeImages: true, overrides: { cmd: ['node', '-e', 'setInterval(() => {}, 1e6)'] } });
    await rt.prepare(app, cluster);
    await rt.start(app, specsFor(app, { task0: 'n1', task1: 'n1', task2: 'n1' }, 'redis://127.0.0.1:6379'), cluster);
    const report = await rt.teardown(app.name, cluster);
    console.log(`      teardown report:\n${report.removed.map((l) => `        ${l}`).join('\n')}`);
    expect(report.failed).to.deep.equal([]);
    expect(report.removed.filter((l) => l.startsWith('container '))).to.have.length(3);
    expect(report.removed.filter((l) => l.startsWith('image jupiter/app-gone:'))).to.have.length(1);
    expect(await e.docker.listContainers({ all: true, filters: { label: ['jupiter.app=gone'] } })).to.deep.equal([]);
    expect(await rt.list(app.name, cluster)).to.deep.equal([]);
    const again = await rt.teardown(app.name, cluster);
    expect(again.removed).to.deep.equal([]);
  });
});
