// Execution profiling of a long app: a node that keeps finishing tasks is waited for past the
// silence limit (with its count of tasks shown), a silent one is given up after that limit. Nodes
// on one machine are asked one after the other, machines in parallel.
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { AppSpec } from '../../config/types.js';
import { machineQueues, requestExecProfiles } from '../../orchestrator/profiles/exec.js';
import { reply } from '../../profilers/agent/inbox.js';
import { heartbeat } from '../../profilers/agent/registry.js';
import type { ExecProfileProgress, ExecProfileReply, ExecProfileRequest } from '../../profilers/exec/handler.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

const PREFIX = 'jx:';
const keys = redisKeys(PREFIX);

/** An agent that answers exec-profile requests with `tasks` progress notes, one every `everyMs`. */
async function scriptedAgent(redis: Redis, node: string, tasks: number, everyMs: number, stop: { done: boolean }, spans: Array<[string, number, number]> = []): Promise<void> {
  const conn = redis.duplicate();
  try {
    while (!stop.done) {
      const res = await conn.blpop(keys.agentInbox(node), 0.2);
      if (!res) continue;
      const msg = JSON.parse(res[1]) as ExecProfileRequest;
      const t0 = Date.now();
      for (let i = 1; i <= tasks; i++) {
        await new Promise((r) => setTimeout(r, everyMs));
        const note: ExecProfileProgress = { node, progress: { done: i, total: tasks } };
        await reply(redis, keys, msg.id, note);
      }
      const body: ExecProfileReply = { node, ok: true, app: msg.app, profiles: [], skipped: [], failed: [] };
      spans.push([node, t0, Date.now()]);
      await reply(redis, keys, msg.id, body);
    }
  } finally {
    conn.disconnect();
  }
}

describe('execution profiling: waiting for nodes as long as they advance', function () {
  this.timeout(20_000);
  let srv: TestRedis;
  let redis: Redis;
  before(async () => {
    srv = await startTestRedis();
    redis = connectRedis(srv.url);
    for (const node of ['node1', 'node2']) {
      await heartbeat(redis, keys, { node, host: '127.0.0.1', port: 1, pid: process.pid, startedAt: Date.now(), heartbeatAt: Date.now(), periodMs: 60_000, hostname: 'test' });
    }
  });
  after(async () => {
    redis.disconnect();
    await srv.stop();
  });

  it('waits for an advancing node past the silence limit and gives up a silent one', async () => {
    const stop = { done: false };
    // node1 needs 12 x 60 ms = 720 ms, four times the 180 ms silence limit; node2 never answers.
    const agent = scriptedAgent(redis, 'node1', 12, 60, stop);
    const seen: Array<[string, number, number]> = [];
    const t0 = Date.now();
    const app = { name: 'long', dir: '/nowhere/long' } as AppSpec;
    const res = await requestExecProfiles(redis, app, { prefix: PREFIX, timeoutMs: 180, onProgress: (n, d, t) => seen.push([n, d, t]) });
    stop.done = true;
    await agent;
    expect(Date.now() - t0).to.be.greaterThan(700);
    expect(res.asked.sort()).to.deep.equal(['node1', 'node2']);
    expect(res.replies.map((r) => [r.node, r.ok])).to.deep.equal([['node1', true]]);
    expect(res.missing).to.deep.equal(['node2']);
    expect(seen.map((s) => s[1])).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(seen.every(([n, , t]) => n === 'node1' && t === 12)).to.equal(true);
  });

  it('asks the nodes of a one-core machine one after the other, machines in parallel', async () => {
    // node1 and node2 on machine A (1 core), node3 on B (resource profiles' host); 4 tasks of 50 ms each.
    const on: Record<string, string> = { node1: 'A', node2: 'A', node3: 'B' };
    await heartbeat(redis, keys, { node: 'node3', host: '127.0.0.1', port: 1, pid: process.pid, startedAt: Date.now(), heartbeatAt: Date.now(), periodMs: 60_000, hostname: 'test' });
    for (const [node, host] of Object.entries(on)) await redis.hset(keys.resources(node), 'json', JSON.stringify({ node, host, cores: 1 }));
    await redis.del(...Object.keys(on).map((n) => keys.agentInbox(n))); // the request the first test left node2
    const stop = { done: false };
    const spans: Array<[string, number, number]> = [];
    const agents = Object.keys(on).map((n) => scriptedAgent(redis, n, 4, 50, stop, spans));
    let plan: string[][] = [];
    const res = await requestExecProfiles(redis, { name: 'two', dir: '/nowhere/two' } as AppSpec, { prefix: PREFIX, timeoutMs: 5000, onPlan: (q) => (plan = q) });
    stop.done = true;
    await Promise.all(agents);
    expect(plan).to.deep.equal([['node1', 'node2'], ['node3']]);
    expect(res.missing).to.deep.equal([]);
    const span = (n: string) => spans.find((s) => s[0] === n)!;
    expect(span('node2')[1]).to.be.at.least(span('node1')[2]); // one machine: after
    expect(span('node3')[1]).to.be.below(span('node1')[2]); // another machine: meanwhile
  });
});

describe('machineQueues: a machine\'s nodes over as many queues as it has cores', () => {
  it('keeps the order within a machine, gives unknown machines a queue each', () => {
    const machine: Record<string, string | undefined> = { a: 'm1', b: 'm2', c: 'm1', d: undefined, e: '', f: 'm2' };
    expect(machineQueues(['a', 'b', 'c', 'd', 'e', 'f'], (n) => ({ host: machine[n], cores: 1 }))).to.deep.equal([['a', 'c'], ['b', 'f'], ['d'], ['e']]);
    expect(machineQueues(['a'], () => undefined)).to.deep.equal([['a']]);
    expect(machineQueues([], () => ({ host: 'm' }))).to.deep.equal([]);
  });

  it('splits a machine\'s nodes round-robin over its cores', () => {
    const of = (n: string) => (n.startsWith('x') ? { host: 'big', cores: 2 } : { host: 'small', cores: 1 });
    expect(machineQueues(['x1', 'x2', 'x3', 'y1', 'y2'], of)).to.deep.equal([['x1', 'x3'], ['x2'], ['y1', 'y2']]);
    expect(machineQueues(['x1'], of)).to.deep.equal([['x1']]);
  });
});
