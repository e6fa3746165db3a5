// `jupiter testbed` end to end, through the real CLI: a 4-host testbed (a namespace, address and
// dockerd per host, htb-shaped pairs, the home's Redis in its own namespace); the profiled
// bandwidths match the shaped rates; a cut link shows in the profiler within 10 s; then, on the
// same testbed, issue 12's fault tests, with `deploy dummy --runtime docker --wait` among them
// (agents and runners in containers on their hosts' engines, asked of each engine; outputs exactly
// what the DAG implies). The checks that count time come first: run-suite starts the other tests
// beside what follows the Redis restart (test/support/measured.ts). Issue 12's fault
// tests with the direct data path (faults-direct.ts: one testbed for both, so `testbed up` and
// `down` are paid once); `testbed down` leaves nothing behind.
// Skipped (reason printed) where namespaces or engines cannot be made (not root, no dockerd).
import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import { CliSandbox, sleep, until } from '../support/faults.js';
import { appsDir } from '../support/paths.js';
import { processCmdlines } from '../../orchestrator/testbed/procs.js';
import { leftovers } from './leftovers.js';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec, ProfileSnapshot } from '../../config/types.js';
import { expectedDummyOutputs } from '../e2e/oracle.js';
import { parseDeployOutput } from '../e2e/workdir.js';
import { checkTestbedHost } from '../../orchestrator/testbed/preflight.js';
import type { TestbedState } from '../../orchestrator/testbed/state.js';
import { demuxLogs } from '../../circe/runtime/docker.js';
import { isAlive } from '../../circe/runtime/pid.js';
import { faultsDirectSuite } from './faults-direct.js';

// node1, node2 at 20 Mbit/s, node3 at 40; node4 at 40 but 30 to node3 (an explicit link); node1
// has a CPU limit. (apps/dummy pins its entry task to node1.)
const TOPOLOGY = {
  name: 'accept4',
  home: { uplink: '100mbit' },
  hosts: [
    { name: 'node1', uplink: '20mbit', cpus: 1 },
    { name: 'node2', uplink: '20mbit' },
    { name: 'node3', uplink: '40mbit' },
    { name: 'node4', uplink: '40mbit' },
  ],
  links: [{ between: ['node3', 'node4'], rate: '30mbit' }],
};
const HOSTS = TOPOLOGY.hosts.map((h) => h.name);

function shapedMbit(from: string, to: string): number {
  if ([from, to].sort().join() === 'node3,node4') return 30;
  const up = (n: string) => Number(TOPOLOGY.hosts.find((h) => h.name === n)!.uplink.replace('mbit', ''));
  return Math.min(up(from), up(to));
}

describe('jupiter testbed: 4 hosts with shaped links, each with its own engine (real CLI)', function () {
  this.timeout(420_000);
  let box: CliSandbox | undefined;
  let state: TestbedState | undefined;
  let env: NodeJS.ProcessEnv = {};
  let app: AppSpec;
  const tbDir = () => join(box!.cwd, 'tb');
  const engine = (host: string) => new Docker({ socketPath: state!.hosts.find((h) => h.name === host)!.engine!.socket });

  before(async function () {
    try {
      checkTestbedHost();
    } catch (e) {
      console.log(`      SKIPPED: ${(e as Error).message}`);
      this.skip();
    }
    box = new CliSandbox(`jtb-accept-${process.pid}-`);
    app = await loadApp(join(appsDir, 'dummy'));
    writeFileSync(join(box.cwd, 'topo.json'), `${JSON.stringify(TOPOLOGY, null, 2)}\n`);
  });

  after(async () => {
    // A failed test still tears everything down.
    if (box && existsSync(join(tbDir(), 'testbed.json'))) await box.run(['testbed', 'down', '--dir', 'tb'], { timeoutMs: 120_000 });
    await box?.dispose();
  });

  describe('up, profile, links', () => {
    it('`testbed up` builds it, starts an agent container on every host\'s engine and writes the cluster configuration', async () => {
      const t0 = Date.now();
      const r = await box!.ok(['testbed', 'up', 'topo.json', '--dir', 'tb'], { timeoutMs: 300_000 });
      console.log(`      testbed up: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      state = JSON.parse(readFileSync(join(tbDir(), 'testbed.json'), 'utf8')) as TestbedState;
      expect(state.complete).to.equal(true);
      env = { JUPITER_CONFIG: state.configFile };
      expect(r.stdout).to.include(`JUPITER_CONFIG=${state.configFile}`);
      expect(r.stdout).to.include('jupiter deploy <app> --runtime docker');
      const config = JSON.parse(readFileSync(state.configFile, 'utf8')) as { runtime: string; nodes: Array<{ name: string; host: string; docker?: string }> };
      expect(config.runtime).to.equal('docker');
      expect(config.nodes.map((n) => n.name)).to.deep.equal(['home', ...HOSTS]);
      for (const n of config.nodes.slice(1)) expect(n.docker).to.equal(`unix://${state.hosts.find((h) => h.name === n.name)!.engine!.socket}`);
      for (const h of HOSTS) {
        const agents = await engine(h).listContainers({ filters: { label: ['jupiter.role=agent'] } });
        expect(agents.map((c) => [c.Labels['jupiter.node'], c.State]), h).to.deep.equal([[h, 'running']]);
      }
      // node1's containers sit under its CPU-limited cgroup.
      const n1 = state.hosts.find((h) => h.name === 'node1')!;
      expect(n1.engine!.cgroup).to.equal(`jtb${state.id}-node1`);
    });

    it('the profiled bandwidth of every pair is within 15% of its shaped rate', async () => {
      // Right after `up`, while the agents' bootstrap runs on a quiet machine (2 rounds of 4 sizes
      // to every peer); the steady probes then refine the fits, so a fit still off after the
      // bootstrap gets until the deadline to settle. A largest-size sample taken while the
      // machine was loaded (a deploy, when this test came after one) can hold a fit low until
      // that size is probed again (seen in CI twice: 8.3 and 13.7 against 20 Mbit/s; once 3.3,
      // when no size that counts as evidence was affordable: budget.ts evidenceDue). Smaller
      // sizes that show a faster link bring that probe forward (budget.ts staleEvidence:
      // corrected in 34-39 s on tbf, against ~100 s at the 2% budget's pace). The 150 s deadline
      // is the budget's slow pace, used only when the early probe does not confirm.
      const waitSec = 150;
      const deadline = Date.now() + waitSec * 1000;
      let rows: Array<{ link: string; shapedMbit: number; profiledMbit: number; error: number }> = [];
      for (;;) {
        const r = await box!.ok(['profile', '--json'], { env });
        const snap = (JSON.parse(r.stdout) as { snapshot: ProfileSnapshot }).snapshot;
        const complete = snap.links.length === HOSTS.length * (HOSTS.length - 1) && snap.links.every((l) => l.samples >= 8);
        rows = snap.links.map((l) => {
          const shaped = shapedMbit(l.from, l.to);
          const got = (l.bandwidthBytesPerSec * 8) / 1e6;
          return { link: `${l.from}->${l.to}`, shapedMbit: shaped, profiledMbit: +got.toFixed(2), error: +(got / shaped - 1).toFixed(3) };
        });
        if (complete && rows.every((row) => Math.abs(row.error) < 0.15)) break;
        if (Date.now() > deadline) {
          if (!complete) throw new Error(`no full bootstrap profile after ${waitSec} s: ${snap.links.length} links`);
          break;
        }
        await sleep(1000);
      }
      console.table(rows);
      const off = rows.filter((r) => Math.abs(r.error) >= 0.15);
      if (off.length > 0) {
        // What the fit saw, newest first, for whoever reads a failed run's log.
        const redis = new Redis(state!.redis!.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
        try {
          for (const r of off) {
            const [from, to] = r.link.split('->') as [string, string];
            const raw = await redis.lrange(redisKeys().linkSamples(from, to), 0, -1);
            console.log(`      ${r.link} samples (bytes seconds at): ${raw.map((x) => { const s = JSON.parse(x) as { bytes: number; seconds: number; at: number }; return `${s.bytes} ${s.seconds.toFixed(4)} ${s.at}`; }).join(' | ')}`);
          }
        } finally {
          redis.disconnect();
        }
      }
      for (const r of rows) expect(Math.abs(r.error), `${r.link}: ${r.profiledMbit} vs ${r.shapedMbit} Mbit/s`).to.be.below(0.15);
    });

    it('`testbed link node1 node3 --down`: node1\'s profiler sees the cut within 10 s; `--up` restores it', async () => {
      const agent = (await engine('node1').listContainers({ filters: { label: ['jupiter.role=agent'] } }))[0]!;
      const c = engine('node1').getContainer(agent.Id);
      const since = Math.floor(Date.now() / 1000);
      const r = await box!.ok(['testbed', 'link', 'node1', 'node3', '--down', '--dir', 'tb']);
      // From the moment the rules are in place (the CLI has returned; its start-up is not the link's).
      const t0 = Date.now();
      expect(r.stdout).to.include('node1 -> node3: down');
      let seenMs = -1;
      while (Date.now() - t0 < 10_000) {
        const logs = demuxLogs((await c.logs({ stdout: true, stderr: true, since, follow: false })) as unknown as Buffer).combined;
        if (/probe to node3 \(\d+ B\) failed/.test(logs)) {
          seenMs = Date.now() - t0;
          break;
        }
        await sleep(250);
      }
      expect(seenMs, 'no failed probe node1 -> node3 in the agent log within 10 s').to.be.greaterThan(0);
      console.log(`      cut node1 - node3 seen by node1's profiler after ${(seenMs / 1000).toFixed(1)} s`);
      const st = await box!.ok(['testbed', 'status', '--dir', 'tb']);
      expect(st.stdout).to.match(/node1 -> node3 .*down/);
      await box!.ok(['testbed', 'link', 'node1', 'node3', '--up', '--dir', 'tb']);
      await box!.ok(['testbed', 'link', 'node2', 'node4', '--rate', '5mbit', '--dir', 'tb']);
      expect((await box!.ok(['testbed', 'status', '--dir', 'tb'])).stdout).to.match(/node2 -> node4 .*5mbit/);
    });
  });

  // On the same testbed (node1..node3 of it), before it goes down.
  // The dummy deploy runs inside it, after the Redis restart (the suite's last check that counts
  // time: run-suite starts the other tests beside what follows).
  faultsDirectSuite(() => (box && state?.complete ? { box, state } : undefined), () => {
    it('`deploy dummy --runtime docker --wait`: runners in containers on their hosts\' engines, outputs exact', async () => {
      const r = await box!.ok(['deploy', 'dummy', '--runtime', 'docker', '--wait', '--timeout', '200'], { env, timeoutMs: 260_000 });
      const out = parseDeployOutput(r.stdout);
      expect(Object.keys(out.placement).sort()).to.deep.equal([...app.dagTasks].sort());
      // Asked of each engine: every task's runner runs on the engine of the host it was placed on.
      const seen: Record<string, string> = {};
      for (const h of HOSTS) {
        for (const c of await engine(h).listContainers({ filters: { label: ['jupiter.app=dummy'] } })) {
          expect(c.Labels['jupiter.node'], c.Labels['jupiter.task']).to.equal(h);
          seen[c.Labels['jupiter.task']!] = h;
        }
      }
      expect(seen).to.deep.equal(out.placement);
      const expected = new Map(app.sampleInputs.flatMap((f) => [...expectedDummyOutputs(app, f)]));
      expect(readdirSync(out.outputDir).sort()).to.deep.equal([...expected.keys()].sort());
      for (const [name, rec] of expected) expect(JSON.parse(readFileSync(join(out.outputDir, name), 'utf8')), name).to.deep.equal(rec);
    });
  });

  describe('down, and bad input', () => {
    it('`testbed down` leaves no namespace, veth, bridge, qdisc, iptables rule, engine, container, cgroup or folder', async () => {
      // node1's engine dies first (kill -9): its containers and their shims go on running, in
      // its cgroup, and down has no engine to ask to remove them.
      const node1 = state!.hosts.find((h) => h.name === 'node1')!.engine!;
      const shims = () => processCmdlines().filter((p) => p.cmd.includes('containerd-shim') && p.cmd.includes(`${node1.execRoot}/`));
      expect(shims(), 'node1 runs containers').to.not.deep.equal([]);
      process.kill(node1.pid, 'SIGKILL');
      await until(() => !isAlive(node1.pid), 10_000, 'node1\'s dockerd to die');
      expect(shims(), 'the shims outlive their engine').to.not.deep.equal([]);
      const r = await box!.ok(['testbed', 'down', '--dir', 'tb'], { timeoutMs: 150_000 });
      expect(r.stdout).to.match(/node1: killed \d+ process\(es\) its engine left running/);
      expect(r.stdout).to.include(`removed bridge jtb${state!.id}br`);
      const left = leftovers(state!, tbDir());
      // Named in full: chai shortens a long array to its length.
      expect(left, `left after down:\n${left.join('\n')}\n`).to.deep.equal([]);
      // The runs' outputs are the user's, not the testbed's: they stay.
      expect(existsSync(join(box!.cwd, 'runs'))).to.equal(true);
    });

    it('bad input: a topology error names file and line; an unknown preset lists the presets', async () => {
      writeFileSync(join(box!.cwd, 'bad.json'), '{\n  "hosts": [\n    { "name": "x1", "uplink": "20mbit" },\n    { "name": "x1" }\n  ]\n}\n');
      const dup = await box!.run(['testbed', 'up', 'bad.json', '--dir', 'bad']);
      expect(dup.code).to.equal(2);
      expect(dup.stderr).to.match(/bad\.json:4: host x1 is listed twice/);
      writeFileSync(join(box!.cwd, 'rate.json'), '{\n  "hosts": [\n    { "name": "x1", "uplink": "20 parsecs" }\n  ]\n}\n');
      const rate = await box!.run(['testbed', 'up', 'rate.json', '--dir', 'bad']);
      expect(rate.code).to.equal(2);
      expect(rate.stderr).to.match(/rate\.json:3: hosts\.0\.uplink must match pattern/);
      const preset = await box!.run(['testbed', 'up', 'ring-3', '--dir', 'bad']);
      expect(preset.code).to.equal(2);
      expect(preset.stderr).to.match(/edge-fog-cloud, mesh-N/);
      const none = await box!.run(['testbed', 'status', '--dir', 'bad']);
      expect(none.code).to.equal(2);
      expect(none.stderr).to.match(/no testbed in .*bad/);
      expect(existsSync(join(box!.cwd, 'bad'))).to.equal(false);
    });
  });
});
