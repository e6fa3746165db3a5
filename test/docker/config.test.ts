// The docker runtime's pure parts (no engine needed): endpoints, container options, Redis URL
// rewriting, secret masking, log demultiplexing, and the error for an unreachable engine.
import { expect } from 'chai';
import { isJupiterError } from '../../config/errors.js';
import { clusterEngines, dockerOptions, endpointKey, isLocalEndpoint, parseDockerHost } from '../../circe/runtime/docker-engine.js';
import { containerOptions, containerRedisUrl } from '../../circe/runtime/docker-container.js';
import { maskSecrets } from '../../circe/runtime/docker-progress.js';
import { DockerRuntime, demuxLogs } from '../../circe/runtime/docker.js';
import { importedPackages } from '../../circe/runtime/docker-image.js';
import { runnerNodeFlags } from '../../circe/runtime/node-flags.js';
import { chainApp, dockerCluster, specsFor } from './fixture.js';

describe('docker runtime: configuration (no engine needed)', () => {
  it('maps each endpoint kind to dockerode options', () => {
    expect(dockerOptions({ kind: 'socket', socketPath: '/run/x.sock' })).to.deep.equal({ socketPath: '/run/x.sock' });
    expect(dockerOptions({ kind: 'tcp', host: 'h', port: 2375 })).to.deep.equal({ protocol: 'http', host: 'h', port: 2375 });
    const tls = dockerOptions({ kind: 'tcp', host: 'h', port: 2376, tls: { ca: '-----BEGIN CERTIFICATE-----\nx', cert: '-----BEGIN CERTIFICATE-----\ny', key: '-----BEGIN KEY-----\nz' } });
    expect(tls).to.include({ protocol: 'https', host: 'h', port: 2376 });
    expect(tls.ca).to.match(/BEGIN/);
    // ssh goes through our own agent (one SSH connection for many requests, known_hosts checked)
    const ssh = dockerOptions({ kind: 'ssh', host: 'edge1', username: 'ops' });
    expect(ssh).to.include({ protocol: 'http', host: 'edge1', port: 22 });
    expect(String((ssh as { agent?: unknown }).agent)).to.equal('ssh://ops@edge1:22');
  });

  it('refuses a TLS file that cannot be read, naming it', () => {
    let err: unknown;
    try {
      dockerOptions({ kind: 'tcp', host: 'h', port: 2376, tls: { ca: '/nonexistent/ca.pem' } });
    } catch (e) {
      err = e;
    }
    expect(isJupiterError(err) && err.exitCode === 2 && err.message.includes('/nonexistent/ca.pem')).to.equal(true);
  });

  it('parses DOCKER_HOST forms and names endpoints without secrets', () => {
    expect(parseDockerHost('unix:///var/run/docker.sock')).to.deep.equal({ kind: 'socket', socketPath: '/var/run/docker.sock' });
    expect(parseDockerHost('tcp://10.0.0.5:2376')).to.deep.equal({ kind: 'tcp', host: '10.0.0.5', port: 2376 });
    expect(parseDockerHost('ssh://ops@edge1:2222')).to.deep.equal({ kind: 'ssh', host: 'edge1', port: 2222, username: 'ops' });
    expect(parseDockerHost('nonsense')).to.equal(undefined);
    expect(endpointKey({ kind: 'ssh', host: 'edge1', username: 'ops' })).to.equal('ssh://ops@edge1:22');
    expect(isLocalEndpoint({ kind: 'tcp', host: '10.0.0.5', port: 2376 })).to.equal(false);
  });

  it('gives nodes sharing an engine one engine', () => {
    const c = dockerCluster([
      { name: 'n1', endpoint: { kind: 'socket', socketPath: '/a.sock' } },
      { name: 'n2', endpoint: { kind: 'socket', socketPath: '/a.sock' } },
      { name: 'n3', endpoint: { kind: 'tcp', host: 'edge', port: 2375 } },
    ]);
    expect(clusterEngines(c).map((e) => [e.key, e.nodes])).to.deep.equal([['unix:///a.sock', ['n1', 'n2']], ['tcp://edge:2375', ['n3']]]);
  });

  it('rewrites a loopback Redis URL to the host gateway in bridge networking only', () => {
    expect(containerRedisUrl('redis://:pw@127.0.0.1:6379/0', 'host')).to.equal('redis://:pw@127.0.0.1:6379/0');
    expect(containerRedisUrl('redis://:pw@127.0.0.1:6379/0', 'bridge')).to.equal('redis://:pw@host.docker.internal:6379/0');
    expect(containerRedisUrl('rediss://localhost:6380', 'bridge')).to.equal('rediss://host.docker.internal:6380');
    expect(containerRedisUrl('redis://10.1.2.3:6379', 'bridge')).to.equal('redis://10.1.2.3:6379');
  });

  it('starts runners with a larger old generation, an eighth of a container limit at most', () => {
    expect(runnerNodeFlags()).to.deep.equal(['--initial-old-space-size=64']);
    expect(runnerNodeFlags(512)).to.deep.equal(['--initial-old-space-size=64']);
    expect(runnerNodeFlags(256)).to.deep.equal(['--initial-old-space-size=32']);
    expect(runnerNodeFlags(64)).to.deep.equal([]);
  });

  it('builds hardened container options with limits, labels and the env contract', () => {
    const { app, cleanup } = chainApp('opts', 1);
    try {
      const [spec] = specsFor(app, { task0: 'n1' }, 'redis://:pw@127.0.0.1:6379');
      const o = containerOptions(spec!, 'img', { baseImage: 'b', network: 'bridge', cpus: 1.5, memoryMb: 512 });
      expect(o.User).to.equal('10001:10001');
      expect(o.Labels).to.deep.equal({ 'jupiter.app': 'opts', 'jupiter.task': 'task0', 'jupiter.node': 'n1', 'jupiter.run': 'r1' });
      expect(o.HostConfig).to.include({ NanoCpus: 1.5e9, Memory: 512 * 1024 * 1024, ReadonlyRootfs: true, NetworkMode: 'bridge' });
      expect(o.HostConfig?.ExtraHosts).to.deep.equal(['host.docker.internal:host-gateway']);
      expect(o.Env).to.include('JUPITER_REDIS_URL=redis://:pw@host.docker.internal:6379');
      expect(o.Cmd).to.deep.equal(['node', '--initial-old-space-size=64', '/jupiter/dist/circe/runner/main.js']);
    } finally {
      cleanup();
    }
  });

  it('masks passwords in URLs', () => {
    expect(maskSecrets('connect redis://user:secret@h:1 and rediss://:p%40ss@h2:2/0')).to.equal('connect redis://user:***@h:1 and rediss://:***@h2:2/0');
    expect(maskSecrets('redis://h:6379')).to.equal('redis://h:6379');
  });

  it('demultiplexes Docker log frames', () => {
    const frame = (kind: number, text: string): Buffer => {
      const h = Buffer.alloc(8);
      h[0] = kind;
      h.writeUInt32BE(Buffer.byteLength(text), 4);
      return Buffer.concat([h, Buffer.from(text)]);
    };
    const r = demuxLogs(Buffer.concat([frame(1, 'out1\n'), frame(2, 'err1\n'), frame(1, 'out2\n')]));
    expect(r).to.deep.equal({ stdout: 'out1\nout2\n', stderr: 'err1\n', combined: 'out1\nerr1\nout2\n' });
  });

  it('finds the packages runner code imports', () => {
    const src = `import { Worker } from 'bullmq';\nimport x from "./local.js";\nconst t = await import('tsx/esm/api');\nimport fs from 'node:fs';\nimport { Graph } from '@dagrejs/graphlib';\nimport 'path';`;
    expect(importedPackages([{ name: 'a.js', data: Buffer.from(src) }])).to.deep.equal(['@dagrejs/graphlib', 'bullmq', 'tsx']);
  });

  it('an unreachable engine is a runtime error naming the node and the endpoint', async () => {
    const { app, cleanup } = chainApp('unreach', 1);
    const cluster = dockerCluster([{ name: 'edge7', endpoint: { kind: 'socket', socketPath: '/nonexistent/docker.sock' } }]);
    let err: unknown;
    try {
      await new DockerRuntime().prepare(app, cluster);
    } catch (e) {
      err = e;
    } finally {
      cleanup();
    }
    expect(isJupiterError(err)).to.equal(true);
    const je = err as { exitCode: number; message: string };
    expect(je.exitCode).to.equal(1);
    expect(je.message).to.include('edge7').and.include('unix:///nonexistent/docker.sock');
    const report = await new DockerRuntime().teardown('unreach', cluster);
    expect(report.removed).to.deep.equal([]);
    expect(report.failed[0]).to.include('edge7');
  });
});
