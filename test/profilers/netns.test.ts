// Real test hosts: one network namespace per node, veth pairs shaped with tc tbf at 8, 40 and
// 200 Mbit/s, an agent in each namespace (`ip netns exec`), Redis on a bridge reachable from all.
// Skipped (with the reason printed) only where namespaces cannot be created.
import { expect } from 'chai';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { isComplete, readProfileView } from '../../orchestrator/profiles/read.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { ExecProfile, ProfileSnapshot } from '../../config/types.js';
import { runCli } from '../support/cli.js';
import { createTestbed, namespaceSupport, type Testbed } from './netns-testbed.js';
import { spawnAgent, waitFor, type AgentProc } from './agent-procs.js';

const NODES = ['node1', 'node2', 'node3'];
// node1-node2 is the slowest link.
const LINKS = [{ a: 0, b: 1, mbit: 8 }, { a: 0, b: 2, mbit: 40 }, { a: 1, b: 2, mbit: 200 }];
export const NETNS_AGENT_ARGS = ['--probe-sizes', '10,100,1000,3000', '--bootstrap-rounds', '2', '--refresh', '3600'];

/** An app whose producer is pinned to node2 and sends 5 MB to a consumer that node2 runs badly. */
function heavyEdgeApp(root: string): string {
  const dir = join(root, 'heavyedge');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '2\nsrc 1 true cons\ncons 1 true home\nsrc node2\n');
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: { src: ['src', true], cons: ['cons', true] },
    exec_profiler: { src: true, cons: true },
  }, null, 2));
  const body = `import { copyFileSync } from 'node:fs';\nimport { join } from 'node:path';
import { randomBytes } from 'node:crypto';\nexport function task(inputs, pathin, pathout) {\n  const out = join(pathout, 'out-' + inputs[0]);\n  copyFileSync(join(pathin, inputs[0]), out);\n  return [out];\n}\n`;
  writeFileSync(join(dir, 'scripts', 'src.mjs'), body);
  writeFileSync(join(dir, 'scripts', 'cons.mjs'), body);
  writeFileSync(join(dir, 'sample_input', '1.txt'), 'sample\n');
  return dir;
}

describe('profilers: agents in network namespaces over tbf-shaped links', function () {
  this.timeout(180_000);
  const reason = namespaceSupport();
  let tb: Testbed | undefined;
  let server: RedisServer | undefined;
  let client: Redis | undefined;
  let agents: AgentProc[] = [];
  let url = '';
  let work = '';

  before(async function () {
    if (reason) {
      console.log(`      SKIPPED: network namespaces cannot be created here: ${reason}`);
      this.skip();
    }
    work = mkdtempSync(join(tmpdir(), 'jupiter-netns-'));
    tb = createTestbed(NODES, LINKS);
    // Off loopback Redis refuses clients unless it has a password (protected mode): give it one.
    server = await new RedisServer({ dir: join(work, 'redis'), bind: tb.bridgeAddr, password: randomBytes(12).toString('hex') }).start();
    url = server.url;
    client = new Redis(url);
    agents = tb.nodes.map((n) => spawnAgent(n.name, ['--listen', `${n.addr}:7070`, '--redis', url, ...NETNS_AGENT_ARGS], {
      prefix: tb!.exec(n.name),
      env: { JUPITER_REDIS_URL: url },
    }));
  });

  after(async () => {
    // Clean up even when a test failed: agents, Redis, then every namespace and link.
    await Promise.allSettled(agents.map((a) => a.stop('SIGKILL')));
    client?.disconnect();
    await server?.stop().catch(() => undefined);
    tb?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('profiles every link\'s bandwidth within ±25% of its shaped rate', async () => {
    const t0 = Date.now();
    let snap: ProfileSnapshot;
    try {
      snap = await waitFor('a complete profile', async () => {
        const v = await readProfileView(client!);
        return v.agents.length === 3 && isComplete(v.snapshot, NODES) && v.snapshot;
      }, 90_000, 200);
    } catch (e) {
      for (const a of agents) console.log(`--- ${a.node}\n${a.log()}`);
      throw e;
    }
    // The fit keeps improving as the second bootstrap round lands; wait for it (2 rounds x 4 sizes).
    snap = await waitFor('the bootstrap to finish', async () => {
      const v = await readProfileView(client!);
      return v.snapshot.links.length === 6 && v.snapshot.links.every((l) => l.samples >= 8) && v.snapshot;
    }, 90_000, 500);
    console.log(`      complete after ${Date.now() - t0} ms; bootstrap finished`);
    const rowsOf = (v: ProfileSnapshot) => v.links.map((l) => {
      const shaped = tb!.rateBytesPerSec(l.from, l.to);
      return { link: `${l.from}->${l.to}`, shapedMbit: (shaped * 8) / 1e6, profiledMbit: +((l.bandwidthBytesPerSec * 8) / 1e6).toFixed(2), error: +(l.bandwidthBytesPerSec / shaped - 1).toFixed(3), latencyMs: +(l.latencySec * 1000).toFixed(2), model: l.model };
    });
    // A bootstrap probe slowed by the machine (CI: node3->node2 fitted at 136.5 of 200 Mbit/s)
    // holds a fit low until the steady probes correct it (budget.ts: early evidence, 34-39 s on
    // the testbed); so the check takes the first snapshot with every link right, or the last one
    // after 60 s, as the testbed suite does.
    let rows = rowsOf(snap);
    const deadline = Date.now() + 60_000;
    while (!rows.every((r) => Math.abs(r.error) < 0.25) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 1000));
      rows = rowsOf((await readProfileView(client!)).snapshot);
    }
    console.log(`      ${rows.every((r) => Math.abs(r.error) < 0.25) ? 'every link within ±25%' : 'still a link off'} after ${Date.now() - t0} ms`);
    console.table(rows);
    for (const r of rows) expect(Math.abs(r.error), `${r.link}: ${r.profiledMbit} vs ${r.shapedMbit} Mbit/s`).to.be.below(0.25);
  });

  it('HEFT keeps an app\'s one heavy edge off the slowest link', async () => {
    const appDir = heavyEdgeApp(work);
    const keys = redisKeys();
    // Execution profiles are set (not measured) to make node2 a bad host for `cons`; the links are measured.
    const now = Date.now();
    const exec: ExecProfile[] = NODES.flatMap((node) => [
      { app: 'heavyedge', task: 'src', node, durationSec: 0.1, outputBytes: 5e6, updatedAt: now },
      { app: 'heavyedge', task: 'cons', node, durationSec: node === 'node2' ? 100 : 1, outputBytes: 1000, updatedAt: now },
    ]);
    for (const e of exec) await client!.set(keys.exec(e.app, e.node, e.task), JSON.stringify(e));
    const r = await runCli(['map', appDir, '--mapper', 'heft', '--json'], { env: { JUPITER_REDIS_URL: url } });
    expect(r.code, r.stderr).to.equal(0);
    const mapping = (JSON.parse(r.stdout) as { mapping: Record<string, string> }).mapping;
    console.log(`      heft: src -> ${mapping.src}, cons -> ${mapping.cons} (5 MB edge; node1-node2 is 8 Mbit/s, node2-node3 200 Mbit/s)`);
    expect(mapping.src).to.equal('node2');
    expect(mapping.cons).to.equal('node3');
  });
});
