// `npm run bench:profilers`: how soon the agents have a complete profile (every link fitted,
// every node's resources) and how close the profiled bandwidths are to the truth.
//  1. three agents on loopback (time to first complete profile; loopback has no true rate);
//  2. three agents in network namespaces over tbf-shaped links (8, 40, 200 Mbit/s), when this
//     machine can create namespaces (root, Linux): time to first complete profile and the
//     bandwidth error per directed link once the bootstrap burst is done.
// Baseline: the original DRUPE published its first regression after 10-15 minutes (its docs say
// profiling "takes about 15 minutes"); the ratio printed is against 15 min.
import { table as newTable } from '../../orchestrator/report/table.js';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { LinkProfile } from '../../config/types.js';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { isComplete, readProfileView } from '../../orchestrator/profiles/read.js';
import { spawnAgent, waitFor, type AgentProc } from '../../test/profilers/agent-procs.js';
import { createTestbed, namespaceSupport, type Testbed } from '../../test/profilers/netns-testbed.js';
import { repoRoot } from '../../test/support/paths.js';

const NODES = ['node1', 'node2', 'node3'];
const ORIGINAL_FIRST_PROFILE_SEC = 15 * 60;
const NETNS_ARGS = ['--probe-sizes', '10,100,1000,3000', '--bootstrap-rounds', '2', '--refresh', '3600'];

interface Scenario {
  name: string;
  firstCompleteMs: number;
  links: LinkProfile[];
  truth?: (l: LinkProfile) => number;
}

async function measure(name: string, redisUrl: string, spawnAll: () => AgentProc[], bootstrapSamples: number, truth?: Scenario['truth']): Promise<Scenario> {
  const client = new Redis(redisUrl);
  const t0 = Date.now();
  const agents = spawnAll();
  try {
    await waitFor('a complete profile', async () => {
      const v = await readProfileView(client);
      return v.agents.length === NODES.length && isComplete(v.snapshot, NODES);
    }, 120_000, 25);
    const firstCompleteMs = Date.now() - t0;
    const snap = await waitFor('the bootstrap burst', async () => {
      const v = await readProfileView(client);
      return v.snapshot.links.length === 6 && v.snapshot.links.every((l) => l.samples >= bootstrapSamples) && v.snapshot;
    }, 180_000, 250);
    return { name, firstCompleteMs, links: snap.links, truth };
  } finally {
    await Promise.allSettled(agents.map((a) => a.stop('SIGTERM')));
    client.disconnect();
  }
}

async function loopback(work: string): Promise<Scenario> {
  const server = await new RedisServer({ dir: join(work, 'redis-lo') }).start();
  try {
    return await measure('loopback', server.url, () => NODES.map((n) => spawnAgent(n, ['--redis', server.url, '--refresh', '3600'], { env: { JUPITER_REDIS_URL: server.url } })), 15);
  } finally {
    await server.stop();
  }
}

async function namespaces(work: string): Promise<Scenario> {
  const tb: Testbed = createTestbed(NODES, [{ a: 0, b: 1, mbit: 8 }, { a: 0, b: 2, mbit: 40 }, { a: 1, b: 2, mbit: 200 }]);
  let server: RedisServer | undefined;
  try {
    server = await new RedisServer({ dir: join(work, 'redis-ns'), bind: tb.bridgeAddr, password: randomBytes(12).toString('hex') }).start();
    const url = server.url;
    return await measure('namespaces (tbf 8/40/200 Mbit/s)', url, () => tb.nodes.map((n) => spawnAgent(n.name, ['--listen', `${n.addr}:7070`, '--redis', url, ...NETNS_ARGS], {
      prefix: tb.exec(n.name),
      env: { JUPITER_REDIS_URL: url },
    })), 8, (l) => tb.rateBytesPerSec(l.from, l.to));
  } finally {
    await server?.stop().catch(() => undefined);
    tb.cleanup();
  }
}

function report(s: Scenario): string {
  const t = newTable(['link', 'profiled', 'shaped', 'error', 'latency', 'model', 'samples']);
  for (const l of [...s.links].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to))) {
    const truth = s.truth?.(l);
    t.push([
      `${l.from} -> ${l.to}`,
      `${((l.bandwidthBytesPerSec * 8) / 1e6).toFixed(1)} Mbit/s`,
      truth ? `${((truth * 8) / 1e6).toFixed(0)} Mbit/s` : 'n/a',
      truth ? `${((l.bandwidthBytesPerSec / truth - 1) * 100).toFixed(1)} %` : 'n/a',
      `${(l.latencySec * 1000).toFixed(2)} ms`,
      l.model ?? '-',
      l.samples,
    ]);
  }
  const sec = s.firstCompleteMs / 1000;
  return [
    `== ${s.name}`,
    `time to first complete profile (3 agents, from process start): ${sec.toFixed(2)} s` +
      ` — ${(ORIGINAL_FIRST_PROFILE_SEC / sec).toFixed(0)}x sooner than the original's ~15 min`,
    t.toString(),
  ].join('\n');
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'jupiter-bench-profilers-'));
  const results: Scenario[] = [];
  try {
    results.push(await loopback(work));
    process.stdout.write(`${report(results.at(-1)!)}\n\n`);
    const why = namespaceSupport();
    if (why) process.stdout.write(`== namespaces: skipped (${why})\n`);
    else {
      results.push(await namespaces(work));
      process.stdout.write(`${report(results.at(-1)!)}\n`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const out = join(repoRoot, 'bench', 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'profilers.json'), `${JSON.stringify(results.map((s) => ({
    name: s.name,
    firstCompleteMs: s.firstCompleteMs,
    links: s.links.map((l) => ({ from: l.from, to: l.to, bandwidthBytesPerSec: l.bandwidthBytesPerSec, truthBytesPerSec: s.truth?.(l), latencySec: l.latencySec, samples: l.samples, model: l.model })),
  })), null, 2)}\n`);
  process.stdout.write('\nwrote bench/results/profilers.json\n');
}

await main();
