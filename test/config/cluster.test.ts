// loadClusterConfig(): the embedded default, jupiter.config.json, nodes.txt and the environment.
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJupiterError } from '../../config/errors.js';
import { loadClusterConfig } from '../../config/cluster/load.js';

describe('loadClusterConfig', () => {
  let tmp = '';
  let n = 0;
  const dirWith = (files: Record<string, string>): string => {
    const dir = join(tmp, `c${n++}`);
    mkdirSync(dir, { recursive: true });
    for (const [rel, content] of Object.entries(files)) writeFileSync(join(dir, rel), content);
    return dir;
  };
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'jupiter-cluster-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('falls back to the embedded default with no configuration at all', async () => {
    const dir = dirWith({});
    const c = await loadClusterConfig({ dir, env: {} });
    expect(c.source).to.equal('embedded default');
    expect(c.embedded).to.equal(true);
    expect(c.redisUrl).to.equal(undefined);
    expect(c.runtime).to.equal('process');
    expect(c.mapper).to.equal('heft');
    expect(c.home).to.deep.equal({ name: 'home', host: '127.0.0.1', docker: { kind: 'socket', socketPath: '/var/run/docker.sock' } });
    expect(c.nodes.map((x) => [x.name, x.host])).to.deep.equal([['node1', '127.0.0.1'], ['node2', '127.0.0.1'], ['node3', '127.0.0.1']]);
    expect(c.redisPrefix).to.equal('jupiter:');
    expect(c.stateDir).to.equal(join(dir, '.jupiter'));
    expect(c.docker).to.deep.equal({ baseImage: 'jupiter/base:local', network: 'host', cpus: 1, memoryMb: 512 });
    expect(c.mqtt).to.deep.equal({ compat: false });
  });

  it('reads nodes.txt (legacy password columns dropped) with jupiter.config.json details by name', async () => {
    mkdirSync(join(tmp, 'certs'), { recursive: true });
    writeFileSync(join(tmp, 'certs', 'ca.pem'), 'ca');
    const dir = dirWith({
      'nodes.txt': 'home fog0 root PASSWORD\nnode2 edge2 root PASSWORD\nnode3 10.0.0.3\n',
      'jupiter.config.json': JSON.stringify({
        redis: { url: 'redis://:pw@fog0:6379/1', prefix: 'lab:' },
        mqtt: { url: 'mqtt://fog0:1883', username: 'j', compat: true },
        runtime: 'docker',
        mapper: 'wave-greedy',
        stateDir: 'state',
        docker: { network: 'bridge', cpus: 0.5, memoryMb: 256 },
        nodes: [
          { name: 'node2', docker: 'tcp://edge2:2376', tls: { ca: '../certs/ca.pem' }, agent: 'edge2:7070' },
          { name: 'node3', host: '10.0.0.33', docker: 'ssh://jupiter@10.0.0.33', cpus: 0.5 },
        ],
      }, null, 2),
    });
    const c = await loadClusterConfig({ dir, env: {} });
    expect(c.source).to.match(/jupiter\.config\.json \+ .*nodes\.txt$/);
    expect(c.embedded).to.equal(false);
    expect(c.redisUrl).to.equal('redis://:pw@fog0:6379/1');
    expect(c.redisPrefix).to.equal('lab:');
    expect(c.mqtt).to.deep.equal({ url: 'mqtt://fog0:1883', username: 'j', compat: true });
    expect([c.runtime, c.mapper]).to.deep.equal(['docker', 'wave-greedy']);
    expect(c.stateDir).to.equal(join(dir, 'state'));
    expect(c.docker).to.deep.equal({ baseImage: 'jupiter/base:local', network: 'bridge', cpus: 0.5, memoryMb: 256 });
    expect(c.home).to.deep.equal({ name: 'home', host: 'fog0' });
    expect(c.nodes[0]).to.deep.equal({
      name: 'node2', host: 'edge2', agent: { host: 'edge2', port: 7070 },
      docker: { kind: 'tcp', host: 'edge2', port: 2376, tls: { ca: join(tmp, 'certs', 'ca.pem') } },
      agentOnEngine: true,
    });
    // A named engine: `stack up`/`deploy` start the node's agent there (orchestrator/stack/node-agents.ts).
    // A declared CPU limit (a quota its processes cannot see) travels to its agent and the mappers.
    expect(c.nodes[1]).to.deep.equal({ name: 'node3', host: '10.0.0.33', docker: { kind: 'ssh', host: '10.0.0.33', username: 'jupiter' }, agentOnEngine: true, cpus: 0.5 });
    expect(c.home.agentOnEngine).to.equal(undefined);
    expect(JSON.stringify(c)).to.not.include('PASSWORD');
  });

  it('takes the node list from jupiter.config.json alone', async () => {
    const dir = dirWith({ 'jupiter.config.json': JSON.stringify({ nodes: [{ name: 'home', host: 'localhost' }, { name: 'edge', host: '192.168.1.9' }] }) });
    const c = await loadClusterConfig({ dir, env: {} });
    expect(c.home.docker).to.deep.equal({ kind: 'socket', socketPath: '/var/run/docker.sock' });
    expect(c.nodes).to.deep.equal([{ name: 'edge', host: '192.168.1.9' }]);
  });

  it('lets the environment override the file, and JUPITER_CONFIG point at it', async () => {
    const dir = dirWith({});
    const cfgDir = dirWith({ 'my.json': JSON.stringify({ runtime: 'docker', mapper: 'heft' }), 'nodes.txt': 'home a\nn1 b\n' });
    const c = await loadClusterConfig({
      dir,
      env: {
        JUPITER_CONFIG: join(cfgDir, 'my.json'),
        JUPITER_REDIS_URL: 'rediss://u:s3cret@r:6380',
        JUPITER_MQTT_URL: 'mqtts://m:8883',
        JUPITER_MQTT_USERNAME: 'mu',
        JUPITER_MQTT_PASSWORD: 'mp',
        JUPITER_MAPPER: 'wave-random',
        JUPITER_RUNTIME: 'process',
      },
    });
    expect(c.redisUrl).to.equal('rediss://u:s3cret@r:6380');
    expect(c.embedded).to.equal(false);
    expect(c.mqtt).to.deep.equal({ url: 'mqtts://m:8883', username: 'mu', password: 'mp', compat: false });
    expect([c.mapper, c.runtime]).to.deep.equal(['wave-random', 'process']);
    expect(c.nodes.map((x) => x.name)).to.deep.equal(['n1']);
    expect(c.source).to.include('environment (JUPITER_REDIS_URL, JUPITER_MQTT_URL');
    expect(c.source).to.not.include('s3cret');
  });

  it('never puts a password into an error message', async () => {
    const dir = dirWith({ 'jupiter.config.json': '{"redis": {"url": "redis://:hunter2@"}}' });
    try {
      await loadClusterConfig({ dir, env: {} });
      expect.fail('expected an error');
    } catch (e) {
      expect(isJupiterError(e)).to.equal(true);
      expect((e as Error).message).to.not.include('hunter2');
    }
  });
});
