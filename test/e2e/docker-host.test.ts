// Nodes on this machine use the engine the docker CLI would: DOCKER_HOST, else the current Docker
// context, else /var/run/docker.sock. Through the real CLI: with DOCKER_HOST naming a private test
// engine, `jupiter deploy dummy --runtime docker --wait` runs its containers there (and starts no
// engine of its own), and `teardown --stack` removes them from it.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadClusterConfig } from '../../config/cluster/load.js';
import { isJupiterError } from '../../config/errors.js';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdOrSkip } from '../support/docker-suite.js';
import { WorkDir } from './workdir.js';

describe('config: local nodes honour DOCKER_HOST and the Docker context', () => {
  const dir = mkdtempSync(join(tmpdir(), 'jupiter-dockerhost-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const empty = { DOCKER_CONFIG: join(dir, 'none') };

  it('uses DOCKER_HOST for every local node, the default socket without it', async () => {
    const c = await loadClusterConfig({ dir, env: { ...empty, DOCKER_HOST: 'unix:///run/other/docker.sock' } });
    for (const n of [c.home, ...c.nodes]) expect(n.docker, n.name).to.deep.equal({ kind: 'socket', socketPath: '/run/other/docker.sock' });
    const d = await loadClusterConfig({ dir, env: empty });
    expect(d.nodes[0]!.docker).to.deep.equal({ kind: 'socket', socketPath: '/var/run/docker.sock' });
    const t = await loadClusterConfig({ dir, env: { ...empty, DOCKER_HOST: 'tcp://127.0.0.1:2375' } });
    expect(t.nodes[0]!.docker).to.deep.equal({ kind: 'tcp', host: '127.0.0.1', port: 2375 });
  });

  it('uses the current Docker context (DOCKER_CONTEXT or currentContext of config.json)', async () => {
    const cfg = join(dir, 'docker-config');
    const meta = join(cfg, 'contexts', 'meta', createHash('sha256').update('edge').digest('hex'));
    mkdirSync(meta, { recursive: true });
    writeFileSync(join(meta, 'meta.json'), JSON.stringify({ Name: 'edge', Endpoints: { docker: { Host: 'unix:///run/edge/docker.sock' } } }));
    writeFileSync(join(cfg, 'config.json'), JSON.stringify({ currentContext: 'edge' }));
    const c = await loadClusterConfig({ dir, env: { DOCKER_CONFIG: cfg } });
    expect(c.home.docker).to.deep.equal({ kind: 'socket', socketPath: '/run/edge/docker.sock' });
    const d = await loadClusterConfig({ dir, env: { DOCKER_CONFIG: cfg, DOCKER_CONTEXT: 'default' } });
    expect(d.home.docker).to.deep.equal({ kind: 'socket', socketPath: '/var/run/docker.sock' });
  });

  it('a DOCKER_HOST it cannot use is an input error naming it', async () => {
    try {
      await loadClusterConfig({ dir, env: { ...empty, DOCKER_HOST: 'npipe:////./pipe/docker_engine' } });
      expect.fail('no error');
    } catch (e) {
      expect(isJupiterError(e)).to.equal(true);
      expect((e as Error).message).to.include('DOCKER_HOST').and.include('npipe');
    }
  });
});

describe('e2e: jupiter deploy --runtime docker on the engine DOCKER_HOST names', function () {
  this.timeout(240_000);
  let engine: TestDockerd | undefined;
  let w: WorkDir | undefined;
  before(async function () {
    engine = await startDockerdOrSkip(this, { useExisting: false });
    w = new WorkDir({ DOCKER_HOST: `unix://${engine.socketPath}` });
  });
  after(async () => {
    await w?.dispose(['dummy']);
    await engine?.stop();
  });

  it('runs the containers there, starts no private engine, and teardown --stack removes them', async () => {
    await w!.expectCli(['deploy', 'dummy', '--runtime', 'docker', '--wait'], 0, 200_000);
    expect((w!.stack() as { dockerd?: unknown }).dockerd).to.equal(undefined);
    const on = await engine!.docker.listContainers({ all: true, filters: { label: ['jupiter.app=dummy'] } });
    expect(on.length).to.equal(7);
    const down = await w!.expectCli(['teardown', 'dummy', '--stack']);
    expect(down.stdout).to.include(`removed container jupiter-dummy-task0`).and.include(`on unix://${engine!.socketPath}`);
    expect(await engine!.docker.listContainers({ all: true, filters: { label: ['jupiter.app=dummy'] } })).to.deep.equal([]);
  });
});
