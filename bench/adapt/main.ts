// npm run bench:adapt — the parts of issue 13 that run without the multi-host testbed, measured
// on network namespaces joined by tbf-shaped veth links (test/profilers/netns-testbed.ts, prefix
// `jadapt`), one real agent per namespace, Redis on the bridge:
//  1. the link fit follows a throttle (200 -> 10 Mbit/s) and the way back: seconds until both
//     directions are fitted within ±25%, also as a ratio to the probe refresh period (the
//     baseline: what a fit that follows at once would still need to see one probe);
//  2. failure localisation: 10 trials of a random link cut (iptables DROP) on a 4-node mesh, and
//     5 trials of 10% random loss (`-m statistic`): localised right, and the loss estimate error;
//  3. the probe budget: steady probe bytes per link as a share of its shaped capacity.
// Writes bench/results/adapt.json. Root and network namespaces needed; skips with the reason.
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { LinkProfile } from '../../config/types.js';
import { redisKeys } from '../../config/redis-keys.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { isComplete, readProfiles } from '../../orchestrator/profiles/read.js';
import { readNetworkHealth } from '../../orchestrator/profiles/faults.js';
import { table as newTable } from '../../orchestrator/report/table.js';
import { linkElement } from '../../profilers/faults/localise.js';
import type { LinkSample } from '../../profilers/network/fit.js';
import { spawnAgent, waitFor, type AgentProc } from '../../test/profilers/agent-procs.js';
import { createTestbed, namespaceSupport, type Testbed, type TestbedLink } from '../../test/profilers/netns-testbed.js';
import { repoRoot } from '../../test/support/paths.js';

const NODES = ['node1', 'node2', 'node3', 'node4'];
const LINKS: TestbedLink[] = [];
for (let a = 0; a < NODES.length; a++) for (let b = a + 1; b < NODES.length; b++) LINKS.push({ a, b, mbit: 200 });
const REFRESH_S = 2;
const ARGS = ['--probe-sizes', '10,100,1000,3000', '--bootstrap-rounds', '2', '--refresh', String(REFRESH_S), '--probe-budget', '0.02', '--loss-interval', '1', '--loss-count', '100'];
const keys = redisKeys();
/** Longest an echo round takes (100 packets 5 ms apart, then 1 s for late echoes), with slack. */
const ROUND_MS = 2000;
const say = (line: string) => process.stderr.write(`${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const reason = namespaceSupport();
  if (reason) {
    say(`bench:adapt skipped: ${reason}`);
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'jadapt-bench-'));
  let tb: Testbed | undefined;
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  let agents: AgentProc[] = [];
  try {
    tb = createTestbed(NODES, LINKS, { prefix: 'jadapt' });
    server = await new RedisServer({ dir: join(work, 'redis'), bind: tb.bridgeAddr, password: randomBytes(12).toString('hex') }).start();
    client = new Redis(server.url);
    const url = server.url;
    agents = tb.nodes.map((n) => spawnAgent(n.name, ['--listen', `${n.addr}:7070`, '--redis', url, ...ARGS], { prefix: tb!.exec(n.name), env: { JUPITER_REDIS_URL: url } }));
    say('bench:adapt: 4 namespaces, 6 links at 200 Mbit/s; waiting for the first complete profile…');
    await waitFor('a complete profile', async () => isComplete(await readProfiles(client!), NODES), 90_000, 250);
    const c = client;
    const fitOf = async (f: string, t: string) => {
      const raw = await c.get(keys.linkFit(f, t));
      return raw ? (JSON.parse(raw) as LinkProfile) : undefined;
    };
    const mbit = (l?: LinkProfile) => (l ? (l.bandwidthBytesPerSec * 8) / 1e6 : NaN);

    // 3. budget, in steady state
    await sleep(4000);
    const b0 = Date.now();
    say('bench:adapt: measuring steady probe traffic for 20 s…');
    await sleep(20_000);
    const b1 = Date.now();
    const budget: Array<{ link: string; share: number }> = [];
    for (const [f, t] of [['node1', 'node2'], ['node2', 'node3'], ['node3', 'node4'], ['node4', 'node1']] as const) {
      const samples = (await c.lrange(keys.linkSamples(f, t), 0, -1)).map((s) => JSON.parse(s) as LinkSample);
      const bytes = samples.filter((s) => s.at > b0 && s.at <= b1).reduce((a, s) => a + s.bytes, 0);
      budget.push({ link: `${f} -> ${t}`, share: bytes / ((b1 - b0) / 1000) / tb.rateBytesPerSec(f, t) });
    }

    // 1. the fit follows
    const follow: Array<{ change: string; seconds: number; fitted: [number, number] }> = [];
    for (const to of [10, 200]) {
      const t0 = Date.now();
      tb.shape('node1', 'node2', to);
      say(`bench:adapt: node1-node2 shaped to ${to} Mbit/s; waiting for the fit…`);
      const ok = (l?: LinkProfile) => l !== undefined && l.updatedAt > t0 && Math.abs(mbit(l) / to - 1) < 0.25;
      await waitFor(`fits at ${to} Mbit/s`, async () => ok(await fitOf('node1', 'node2')) && ok(await fitOf('node2', 'node1')), 120_000, 200);
      follow.push({ change: `node1-node2 -> ${to} Mbit/s`, seconds: (Date.now() - t0) / 1000, fitted: [mbit(await fitOf('node1', 'node2')), mbit(await fitOf('node2', 'node1'))] });
      await sleep(3000);
    }

    // 2. localisation trials
    let seed = 20261125;
    const rnd = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
    const pick = () => {
      const l = LINKS[Math.floor(rnd() * LINKS.length)]!;
      return [NODES[l.a]!, NODES[l.b]!] as const;
    };
    const trial = async (a: string, b: string, probability?: number) => {
      tb!.impair(a, b, probability);
      const t0 = Date.now();
      await sleep(probability === undefined ? 6000 : 9000);
      // Only rounds that started after the change: a round lasts 100 x 5 ms + 1 s of waiting.
      const health = await readNetworkHealth(c, keys, NODES, Date.now(), Date.now() - t0 - ROUND_MS);
      tb!.heal(a, b);
      await sleep(2500); // let the impaired rounds leave the next trial's window
      return health.faults;
    };
    const cuts: Array<{ link: string; found: string[]; right: boolean; dead: boolean; loss: number | null }> = [];
    for (let i = 0; i < 10; i++) {
      const [a, b] = pick();
      const faults = await trial(a, b);
      const right = faults.length === 1 && faults[0]!.element === linkElement(a, b);
      cuts.push({ link: `${a}-${b}`, found: faults.map((f) => f.element), right, dead: right && faults[0]!.dead, loss: right ? faults[0]!.loss : null });
      say(`bench:adapt: cut ${i + 1}/10 ${a}-${b}: ${right ? `localised (loss ${(faults[0]!.loss * 100).toFixed(0)}%${faults[0]!.dead ? ', DEAD' : ''})` : `found ${JSON.stringify(faults.map((f) => f.element))}`}`);
    }
    const lossy: Array<{ link: string; estimated: number | null; right: boolean }> = [];
    for (let i = 0; i < 5; i++) {
      const [a, b] = pick();
      const faults = await trial(a, b, 0.1);
      const f = faults.length === 1 && faults[0]!.element === linkElement(a, b) ? faults[0]! : undefined;
      lossy.push({ link: `${a}-${b}`, estimated: f ? f.loss : null, right: f !== undefined && Math.abs(f.loss - 0.1) <= 0.05 });
      say(`bench:adapt: 10% loss ${i + 1}/5 ${a}-${b}: ${f ? `estimated ${(f.loss * 100).toFixed(1)}%` : `found ${JSON.stringify(faults.map((x) => x.element))}`}`);
    }

    const t1 = newTable(['change', 'fit follows in', 'x refresh period', 'fitted (both directions)']);
    for (const f of follow) t1.push([f.change, `${f.seconds.toFixed(1)} s`, (f.seconds / REFRESH_S).toFixed(1), f.fitted.map((x) => `${x.toFixed(1)} Mbit/s`).join(' / ')]);
    const t2 = newTable(['trials', 'localised right', 'detail']);
    t2.push(['10 random link cuts', `${cuts.filter((x) => x.right).length} / 10`, `as that link, no node blamed; flagged DEAD ${cuts.filter((x) => x.dead).length} / 10`]);
    t2.push(['5 random links at 10% loss', `${lossy.filter((x) => x.right).length} / 5`, `estimates ${lossy.map((x) => (x.estimated === null ? '-' : `${(x.estimated * 100).toFixed(1)}%`)).join(', ')}`]);
    const t3 = newTable(['link', 'steady probe share of capacity (budget 2%)']);
    for (const x of budget) t3.push([x.link, `${(x.share * 100).toFixed(2)} %`]);
    process.stdout.write(`The link fit follows the network (namespaces, tbf; refresh ${REFRESH_S} s)\n${t1.toString()}\n\nFailure localisation (iptables on namespace links, 100 echo packets/s per link)\n${t2.toString()}\n\nProbe budget (20 s of steady state)\n${t3.toString()}\n`);
    const out = join(repoRoot, 'bench', 'results');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'adapt.json'), `${JSON.stringify({ at: new Date().toISOString(), conditions: 'shared 2-core machine, other sessions running; 4 network namespaces, tbf links', refreshSec: REFRESH_S, follow, cuts, lossy, budget }, null, 2)}\n`);
    say('bench:adapt: wrote bench/results/adapt.json');
  } finally {
    await Promise.allSettled(agents.map((a) => a.stop('SIGKILL')));
    client?.disconnect();
    await server?.stop().catch(() => undefined);
    tb?.cleanup();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  say(`bench:adapt failed: ${(e as Error).stack ?? String(e)}`);
  process.exitCode = 1;
});
