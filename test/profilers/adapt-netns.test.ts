// Issue 13 foundations on real hosts: network namespaces joined by tbf-shaped veth links
// (netns-testbed.ts, prefix `jadapt`), a real agent in each, Redis on the bridge.
//  - a link throttled after its fit: the fit follows (list cut at the change, re-probe);
//  - steady probe traffic stays within the 2% budget of each link (counted on the other links
//    while the throttle test waits for its fit);
//  - iptables loss on a link (10% random, then a cut) is localised as that link, with its loss
//    rate, and shows in `jupiter profile`.
// Skipped (with the reason printed) only where namespaces cannot be created.
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { isComplete, readProfiles } from '../../orchestrator/profiles/read.js';
import { readNetworkHealth } from '../../orchestrator/profiles/faults.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { LinkProfile } from '../../config/types.js';
import type { LinkSample } from '../../profilers/network/fit.js';
import { linkElement } from '../../profilers/faults/localise.js';
import { runCli } from '../support/cli.js';
import { createTestbed, namespaceSupport, type Testbed } from './netns-testbed.js';
import { spawnAgent, waitFor, type AgentProc } from './agent-procs.js';

const NODES = ['node1', 'node2', 'node3'];
const LINKS = [{ a: 0, b: 1, mbit: 200 }, { a: 0, b: 2, mbit: 200 }, { a: 1, b: 2, mbit: 200 }];
const ARGS = ['--probe-sizes', '10,100,1000,3000', '--bootstrap-rounds', '2', '--refresh', '2', '--probe-budget', '0.02', '--loss-interval', '2', '--loss-count', '100'];
const keys = redisKeys();

describe('profilers: the profile follows the network (namespaces, tbf, iptables)', function () {
  this.timeout(240_000);
  const reason = namespaceSupport();
  let tb: Testbed | undefined;
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  let agents: AgentProc[] = [];
  let url = '';
  let work = '';

  const fitOf = async (from: string, to: string) => {
    const raw = await client!.get(keys.linkFit(from, to));
    return raw ? (JSON.parse(raw) as LinkProfile) : undefined;
  };
  const mbit = (l: LinkProfile | undefined) => (l ? (l.bandwidthBytesPerSec * 8) / 1e6 : NaN);

  before(async function () {
    if (reason) {
      console.log(`      SKIPPED: network namespaces cannot be created here: ${reason}`);
      this.skip();
    }
    work = mkdtempSync(join(tmpdir(), 'jadapt-netns-'));
    tb = createTestbed(NODES, LINKS, { prefix: 'jadapt' });
    server = await new RedisServer({ dir: join(work, 'redis'), bind: tb.bridgeAddr, password: randomBytes(12).toString('hex') }).start();
    url = server.url;
    client = new Redis(url);
    agents = tb.nodes.map((n) => spawnAgent(n.name, ['--listen', `${n.addr}:7070`, '--redis', url, ...ARGS], { prefix: tb!.exec(n.name), env: { JUPITER_REDIS_URL: url } }));
    await waitFor('a complete profile', async () => isComplete(await readProfiles(client!), NODES), 60_000, 250);
  });

  after(async () => {
    await Promise.allSettled(agents.map((a) => a.stop('SIGKILL')));
    client?.disconnect();
    await server?.stop().catch(() => undefined);
    tb?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  /**
   * The steady probes' bytes on links the throttle and node1's restart leave alone, counted while
   * the throttle test runs (its wait for the fit doubles as the budget's window): what each link
   * carried as a share of its shaped rate.
   */
  const BUDGET_LINKS = [['node1', 'node3'], ['node2', 'node3'], ['node3', 'node1']] as const;
  const BUDGET_WINDOW_MS = 20_000;
  let budget: Array<{ from: string; to: string; bytes: number; share: number; sec: number }> | undefined;
  const measureBudget = async (t0: number, t1: number): Promise<void> => {
    budget = [];
    for (const [from, to] of BUDGET_LINKS) {
      const samples = (await client!.lrange(keys.linkSamples(from, to), 0, -1)).map((s) => JSON.parse(s) as LinkSample);
      const bytes = samples.filter((s) => s.at > t0 && s.at <= t1).reduce((a, s) => a + s.bytes, 0);
      budget.push({ from, to, bytes, sec: (t1 - t0) / 1000, share: bytes / ((t1 - t0) / 1000) / tb!.rateBytesPerSec(from, to) });
    }
  };

  it('a link throttled from 200 to 10 Mbit/s after its fit: the fit follows, and stays after an agent restart', async () => {
    // From a finished bootstrap (2 rounds of 4 sizes each way), which is also where the budget's
    // window starts: steady probes only.
    await waitFor('the bootstrap of node1 <-> node2', async () => ((await fitOf('node1', 'node2'))?.samples ?? 0) >= 8 && ((await fitOf('node2', 'node1'))?.samples ?? 0) >= 8, 60_000, 250);
    const w0 = Date.now() + 1000;
    const before = mbit(await fitOf('node1', 'node2'));
    const initial = (await client!.lrange(keys.linkSamples('node1', 'node2'), 0, 11)).map((x) => JSON.parse(x) as LinkSample);
    console.log(`      node1->node2 before: ${before.toFixed(1)} Mbit/s from ${initial.map((x) => `${x.bytes / 1024}K ${(x.seconds * 1000).toFixed(1)}ms`).join(', ')}`);
    // The starting point: far above the new rate (its accuracy is netns.test.ts's subject).
    expect(before).to.be.greaterThan(100);
    const t0 = Date.now();
    tb!.shape('node1', 'node2', 10);
    const ok = (l: LinkProfile | undefined) => l !== undefined && l.updatedAt > t0 && Math.abs(mbit(l) / 10 - 1) < 0.25;
    try {
      await waitFor('both directions fitted at 10 Mbit/s', async () => ok(await fitOf('node1', 'node2')) && ok(await fitOf('node2', 'node1')), 90_000, 250);
    } catch (e) {
      // What the agents saw, to tell a slow detection from a wrong fit.
      for (const [f, t] of [['node1', 'node2'], ['node2', 'node1']]) {
        const samples = (await client!.lrange(keys.linkSamples(f!, t!), 0, 14)).map((x) => JSON.parse(x) as LinkSample);
        console.log(`      ${f}->${t} fit ${mbit(await fitOf(f!, t!)).toFixed(1)} Mbit/s; newest samples: ${samples.map((x) => `${x.bytes / 1024}K ${(x.seconds * 1000).toFixed(1)}ms ${((x.at - t0) / 1000).toFixed(1)}s`).join(', ')}`);
      }
      for (const a of agents.slice(0, 2)) console.log(a.log().split('\n').filter((l) => /changed|failed/.test(l)).slice(-5).join('\n'));
      throw e;
    }
    console.log(`      fit follows the throttle in ${((Date.now() - t0) / 1000).toFixed(1)} s: node1->node2 ${mbit(await fitOf('node1', 'node2')).toFixed(1)} Mbit/s, node2->node1 ${mbit(await fitOf('node2', 'node1')).toFixed(1)} Mbit/s (was ${before.toFixed(0)})`);
    // The unaffected links keep their fit.
    expect(mbit(await fitOf('node1', 'node3'))).to.be.greaterThan(100);
    // The budget's window closes before node1's agent restarts (a bootstrap is not steady).
    await new Promise((r) => setTimeout(r, Math.max(0, w0 + BUDGET_WINDOW_MS - Date.now())));
    await measureBudget(w0, Date.now());
    // An agent restart (the issue's case) re-bootstraps over the new link: the fit stays right.
    const i = NODES.indexOf('node1');
    await agents[i]!.stop('SIGTERM');
    const t1 = Date.now();
    agents[i] = spawnAgent('node1', ['--listen', `${tb!.nodes[i]!.addr}:7070`, '--redis', url, ...ARGS], { prefix: tb!.exec('node1'), env: { JUPITER_REDIS_URL: url } });
    await waitFor('a fit after the restart', async () => {
      const l = await fitOf('node1', 'node2');
      return l !== undefined && l.updatedAt > t1 + 3000;
    }, 60_000, 250);
    expect(mbit(await fitOf('node1', 'node2')) / 10).to.be.closeTo(1, 0.25);
    tb!.shape('node1', 'node2', 200);
  });

  it('keeps steady probe traffic within 2% of each link\'s capacity', () => {
    expect(budget, 'no window: the throttle test above ended before it closed').to.not.equal(undefined);
    for (const b of budget!) {
      console.log(`      ${b.from} -> ${b.to}: steady probes ${(b.bytes / 1e6).toFixed(2)} MB in ${b.sec.toFixed(0)} s = ${(b.share * 100).toFixed(2)} % of 200 Mbit/s`);
      expect(b.bytes).to.be.greaterThan(0);
      expect(b.share).to.be.at.most(0.02 * 1.1); // 10% slack: a probe straddling the window's edges
    }
  });

  it('localises a link with 10% random loss (loss within ±5 points), then a cut link (not a node), and `jupiter profile` shows it', async () => {
    const pairs = [['node1', 'node3'], ['node2', 'node3']] as const;
    // From a healthy network: the throttle test restarted node1's agent, and its peers' echo
    // probes lost while it was down (or queued behind its bootstrap) once pooled into the
    // impairment's window as a fault of node1 (loss 0.55 on both its links, CI).
    await waitFor('no fault in the last 4 s of loss rounds', async () => (await readNetworkHealth(client!, keys, NODES, Date.now(), 4000)).faults.length === 0, 30_000, 500);
    for (const [a, b] of pairs) {
      tb!.impair(a, b, 0.1);
      const t0 = Date.now();
      await new Promise((r) => setTimeout(r, 9000));
      // pool only the rounds since the impairment
      const health = await readNetworkHealth(client!, keys, NODES, Date.now(), Date.now() - t0 - 2000);
      console.log(`      ${a}-${b} at 10% loss: ${JSON.stringify(health.faults.map((f) => [f.element, +f.loss.toFixed(3)]))}`);
      expect(health.faults.map((f) => f.element)).to.deep.equal([linkElement(a, b)]);
      expect(health.faults[0]!.loss).to.be.closeTo(0.1, 0.05);
      tb!.heal(a, b);
    }
    tb!.impair('node2', 'node3');
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 7000));
    const health = await readNetworkHealth(client!, keys, NODES, Date.now(), Date.now() - t0 - 2000);
    expect(health.faults.map((f) => [f.kind, f.element, f.dead])).to.deep.equal([['link', linkElement('node2', 'node3'), true]]);
    const r = await runCli(['profile'], { env: { JUPITER_REDIS_URL: url } });
    expect(r.code, r.stderr).to.equal(0);
    // `jupiter profile` pools the last minute: the cut (and the earlier 10%) show as faults with their loss.
    console.log(r.stdout.slice(r.stdout.indexOf('Network faults')));
    expect(r.stdout).to.match(/Network faults \(\d\)/);
    expect(r.stdout).to.include('node2 <-> node3');
    tb!.heal('node2', 'node3');
  });
});
