// Agents start themselves: with a configuration naming each node's Docker engine, the real CLI's
// `stack up` runs one agent container per node on that node's engine (two private dockerd = two
// nodes, a real password-protected redis-server), sandboxed like runners; the agents heartbeat and
// profile; the restart policy brings a killed agent back; `deploy` restarts a missing one;
// `stack status` lists them; `stack down` leaves no container behind.
import { expect } from 'chai';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { Redis } from 'ioredis';
import type { TestDockerd } from '../support/dockerd.js';
import { startDockerdsOrSkip } from '../support/docker-suite.js';
import { CliSandbox } from '../support/faults.js';
import { appsDir } from '../support/paths.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { freePort } from '../../orchestrator/stack/free-port.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { liveAgents } from '../../profilers/agent/registry.js';
import { redisKeys } from '../../config/redis-keys.js';
import { isComplete, type ProfileView } from '../../orchestrator/profiles/read.js';
import { agentContainerOptions, stackId } from '../../orchestrator/stack/agent-container.js';
import { ensureNodeAgents } from '../../orchestrator/stack/node-agents.js';
import { loadClusterConfig } from '../../config/cluster/load.js';

const PASSWORD = `pw${process.pid}secret`;

async function agentContainers(docker: Docker): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: ['jupiter.role=agent'] } });
}

async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('node agents start themselves on each node\'s Docker engine (real CLI, two dockerd, real Redis)', function () {
  this.timeout(180_000);
  let engines: TestDockerd[] = [];
  let redisServer: RedisServer | undefined;
  let redis: Redis | undefined;
  let box: CliSandbox | undefined;
  let redisDir: string | undefined;
  const nodes = ['node1', 'node2'];
  const engineOf = (node: string): Docker => engines[nodes.indexOf(node)]!.docker;
  const live = async (): Promise<string[]> => (await liveAgents(redis!, redisKeys('jupiter:'))).map((a) => a.node);

  before(async function () {
    engines = await startDockerdsOrSkip(this, [{ useExisting: false }, { useExisting: false }]);
    redisDir = mkdtempSync(join(tmpdir(), `jupiter-agents-redis-${process.pid}-`));
    redisServer = await new RedisServer({ dir: redisDir, password: PASSWORD }).start();
    redis = connectRedis(redisServer.url);
    box = new CliSandbox(`jupiter-node-agents-${process.pid}-`);
    const [p1, p2] = [await freePort(), await freePort()];
    writeFileSync(join(box.cwd, 'jupiter.config.json'), `${JSON.stringify({
      redis: { url: redisServer.url },
      docker: { cpus: 1, memoryMb: 384 },
      nodes: [
        { name: 'home', host: '127.0.0.1' },
        { name: 'node1', host: '127.0.0.1', docker: `unix://${engines[0]!.socketPath}`, agent: `127.0.0.1:${p1}` },
        { name: 'node2', host: '127.0.0.1', docker: `unix://${engines[1]!.socketPath}`, agent: `127.0.0.1:${p2}` },
      ],
    }, null, 2)}\n`);
  });

  after(async () => {
    await box?.dispose();
    for (const e of engines) {
      for (const c of await agentContainers(e.docker).catch(() => [])) await e.docker.getContainer(c.Id).remove({ force: true }).catch(() => undefined);
    }
    redis?.disconnect();
    await redisServer?.stop();
    await Promise.all(engines.map((e) => e.stop()));
    if (redisDir) rmSync(redisDir, { recursive: true, force: true });
  });

  it('`stack up` starts one sandboxed agent container per node on that node\'s engine', async () => {
    const t0 = Date.now();
    const r = await box!.ok(['stack', 'up'], { timeoutMs: 150_000 });
    console.log(`      stack up (base + deps + agent image on 2 engines, 2 agents, until both heartbeat): ${Date.now() - t0} ms`);
    expect(r.stdout).to.include('heartbeats 2/2 agents live in Redis');
    for (const node of nodes) {
      expect(r.stdout).to.match(new RegExp(`agent +${node}: container [0-9a-f]{12} on unix://.* \\(started\\)`));
      const list = await agentContainers(engineOf(node));
      expect(list.map((c) => c.Labels['jupiter.node']), node).to.deep.equal([node]);
      const info = await engineOf(node).getContainer(list[0]!.Id).inspect();
      expect(info.State.Status).to.equal('running');
      expect(info.Config.Labels).to.include({ 'jupiter.role': 'agent', 'jupiter.node': node });
      expect(info.Config.Labels['jupiter.stack']).to.match(/^[0-9a-f]{12}$/);
      expect(info.Config.User).to.equal('10001:10001');
      expect(info.HostConfig.NetworkMode).to.equal('host');
      expect(info.HostConfig.ReadonlyRootfs).to.equal(true);
      expect(info.HostConfig.CapDrop).to.deep.equal(['ALL']);
      expect(info.HostConfig.SecurityOpt).to.deep.equal(['no-new-privileges']);
      expect(info.HostConfig.RestartPolicy?.Name).to.equal('unless-stopped');
      expect(info.HostConfig.Memory).to.equal(384 * 1024 * 1024);
      expect(info.HostConfig.NanoCpus).to.equal(1e9);
      expect(info.HostConfig.PidsLimit).to.equal(256);
      expect(info.HostConfig.Binds ?? []).to.deep.equal([]);
      expect(info.Mounts.filter((m) => m.Type !== 'tmpfs')).to.deep.equal([]);
      // The password reaches the agent through its environment only.
      expect(JSON.stringify([info.Config.Cmd, info.Config.Entrypoint, info.Path, info.Args])).to.not.include(PASSWORD);
      expect(info.Config.Env.some((e) => e.startsWith('JUPITER_REDIS_URL=') && e.includes(PASSWORD))).to.equal(true);
    }
  });

  it('the agents heartbeat and a complete profile appears in Redis (`jupiter profile --json`)', async () => {
    await until('both heartbeats', 30_000, async () => ((await live()).length === 2 ? true : undefined));
    const r = await box!.ok(['profile', '--json', '--wait', '60'], { timeoutMs: 90_000 });
    const view = JSON.parse(r.stdout) as ProfileView;
    expect(view.agents.map((a) => a.node)).to.deep.equal(nodes);
    expect(isComplete(view.snapshot, nodes)).to.equal(true);
  });

  it('a second `stack up` keeps the running agents', async () => {
    const before = await Promise.all(nodes.map(async (n) => (await agentContainers(engineOf(n)))[0]!.Id));
    const r = await box!.ok(['stack', 'up']);
    for (const n of nodes) expect(r.stdout).to.match(new RegExp(`agent +${n}: container [0-9a-f]{12} .*\\(kept\\)`));
    expect(await Promise.all(nodes.map(async (n) => (await agentContainers(engineOf(n)))[0]!.Id))).to.deep.equal(before);
  });

  it('killing the agent container\'s process: the restart policy brings it back', async () => {
    const c = engineOf('node1').getContainer((await agentContainers(engineOf('node1')))[0]!.Id);
    const pid = (await c.inspect()).State.Pid;
    expect(pid).to.be.greaterThan(0);
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');
    const back = await until('the agent container restarted', 30_000, async () => {
      const i = await c.inspect();
      return i.RestartCount >= 1 && i.State.Status === 'running' && i.State.Pid !== pid ? i : undefined;
    });
    expect(back.RestartCount).to.be.at.least(1);
    // The new process registers afresh (its startedAt is after the kill; same clock, same machine).
    await until('node1 heartbeat from the restarted agent', 30_000, async () => {
      const reg = (await liveAgents(redis!, redisKeys('jupiter:'))).find((a) => a.node === 'node1');
      return reg && reg.startedAt >= killedAt ? true : undefined;
    });
  });

  it('`deploy` with an agent missing starts it (and the containerised agents profile the app)', async () => {
    const gone = (await agentContainers(engineOf('node2')))[0]!;
    await engineOf('node2').getContainer(gone.Id).remove({ force: true });
    const r = await box!.ok(['deploy', 'dummy', '--runtime', 'process', '--wait', '--timeout', '90'], { timeoutMs: 150_000 });
    expect(r.stdout + r.stderr).to.match(/1 started/);
    const now = await agentContainers(engineOf('node2'));
    expect(now.length).to.equal(1);
    expect(now[0]!.Id).to.not.equal(gone.Id);
    expect(now[0]!.State).to.equal('running');
    // The execution profiler inside each agent container ran the app's tasks (the app comes from the image).
    for (const n of nodes) expect((await redis!.keys(`jupiter:exec:dummy:${n}:*`)).length, n).to.be.greaterThan(0);
    await box!.ok(['teardown', 'dummy']);
  });

  it('an app outside the checkout\'s apps/: the containerised agents say they do not have it', async () => {
    cpSync(join(appsDir, 'dummy'), join(box!.cwd, 'outoftree'), { recursive: true });
    const r = await box!.run(['profile', 'exec', './outoftree', '--timeout', '30']);
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stdout).to.match(/node1: app outoftree is not on this node .*the apps of its image/);
  });

  it('`stack status` shows each node\'s agent: engine, container, state, live heartbeat', async () => {
    await until('both heartbeats', 30_000, async () => ((await live()).length === 2 ? true : undefined));
    const r = await box!.ok(['stack', 'status']);
    for (const [i, n] of nodes.entries()) {
      const line = r.stdout.split('\n').find((l) => l.includes(` ${n} `) && l.includes('unix://'));
      expect(line, r.stdout).to.not.equal(undefined);
      expect(line).to.include(engines[i]!.socketPath.slice(0, 20));
      expect(line).to.match(/[0-9a-f]{12}/);
      expect(line).to.match(/running/);
      expect(line).to.match(/live/);
    }
  });

  it('`stack down` removes the agent containers and says so', async () => {
    const r = await box!.ok(['stack', 'down']);
    for (const n of nodes) expect(r.stdout).to.match(new RegExp(`removed agent container jupiter-agent-${n}-[0-9a-f]{12} \\([0-9a-f]{12}\\) of ${n}`));
    for (const n of nodes) expect(await agentContainers(engineOf(n))).to.deep.equal([]);
  });

  it('an agent that cannot start on its node: `stack up` exits 1 naming it, with its log tail (password masked)', async () => {
    const wrong = new CliSandbox(`jupiter-node-agents-wrong-${process.pid}-`);
    try {
      // 192.0.2.1 (TEST-NET-1) is no address of this machine: the agent cannot listen there.
      writeFileSync(join(wrong.cwd, 'jupiter.config.json'), JSON.stringify({
        redis: { url: redisServer!.url },
        nodes: [{ name: 'home', host: '127.0.0.1' }, { name: 'node1', host: '127.0.0.1', docker: `unix://${engines[0]!.socketPath}`, agent: '192.0.2.1:7070' }],
      }));
      const r = await wrong.run(['stack', 'up', '--agent-wait', '6'], { timeoutMs: 90_000 });
      expect(r.code, r.stderr).to.equal(1);
      expect(r.stderr).to.match(/no heartbeat after 6 s from the agent of node1/);
      expect(r.stderr).to.include(engines[0]!.socketPath);
      expect(r.stderr).to.match(/192\.0\.2\.1/);
      expect(r.stdout + r.stderr).to.not.include(PASSWORD);
      console.log(`      ${r.stderr.split('\n').filter((l) => !/^[✔…]/.test(l.trim())).slice(0, 6).join('\n      ')}`);
    } finally {
      await wrong.dispose();
    }
    expect(await agentContainers(engineOf('node1'))).to.deep.equal([]);
  });
});

describe('node agents: container options and configuration checks (no engine needed)', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), `jupiter-agents-conf-${process.pid}-`));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function cluster(redisUrl: string, docker: string): Promise<Awaited<ReturnType<typeof loadClusterConfig>>> {
    writeFileSync(join(dir, 'jupiter.config.json'), JSON.stringify({
      redis: { url: redisUrl },
      nodes: [{ name: 'home', host: '10.0.0.1' }, { name: 'edge1', host: '10.0.0.2', docker }, { name: 'edge2', host: '10.0.0.3' }],
    }));
    return loadClusterConfig({ dir, env: {} });
  }

  it('only nodes whose engine the configuration names get an agent container', async () => {
    const c = await cluster('redis://:pw@10.0.0.1:6379', 'tcp://10.0.0.2:2375');
    expect(c.nodes.map((n) => [n.name, n.agentOnEngine ?? false])).to.deep.equal([['edge1', true], ['edge2', false]]);
  });

  it('keeps the Redis URL out of the command line; a different configuration is a different hash; the stack id ignores the password', async () => {
    const c = await cluster('redis://:pw@10.0.0.1:6379', 'tcp://10.0.0.2:2375');
    const stack = stackId(c, c.redisUrl!);
    const o = agentContainerOptions({ node: c.nodes[0]!, image: 'jupiter/agent:x', cluster: c, redisUrl: c.redisUrl!, stack });
    // The probe budget travels as a flag: a container agent has no configuration file to read it from.
    expect(o.Cmd).to.deep.equal(['agent', '--node', 'edge1', '--listen', '10.0.0.2:0', '--prefix', 'jupiter:', '--probe-budget', '0.02']);
    expect(JSON.stringify(o.Cmd)).to.not.include('pw');
    expect(o.Env).to.include('JUPITER_REDIS_URL=redis://:pw@10.0.0.1:6379');
    expect(o.Labels).to.include({ 'jupiter.role': 'agent', 'jupiter.node': 'edge1', 'jupiter.stack': stack });
    const other = agentContainerOptions({ node: c.nodes[0]!, image: 'jupiter/agent:y', cluster: c, redisUrl: c.redisUrl!, stack });
    expect(other.Labels!['jupiter.agent.config']).to.not.equal(o.Labels!['jupiter.agent.config']);
    expect(stackId(c, 'redis://:other@10.0.0.1:6379')).to.equal(stack);
    expect(stackId({ ...c, redisPrefix: 'lab:' }, c.redisUrl!)).to.not.equal(stack);
  });

  it('a remote engine with a loopback Redis: a clear input error before any engine is contacted', async () => {
    const c = await cluster('redis://127.0.0.1:6379', 'tcp://10.0.0.2:2375');
    const err = await ensureNodeAgents(c, c.redisUrl!).then(() => undefined, (e: unknown) => e as Error & { kind?: string; hint?: string });
    expect(err?.kind).to.equal('input');
    expect(err?.message).to.match(/agent of edge1 .*tcp:\/\/10\.0\.0\.2:2375.*cannot reach Redis/);
    expect(err?.hint).to.match(/redis\.url/);
  });
});
