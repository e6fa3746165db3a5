// Distributed WAVE on real agents: `jupiter map <app> --mapper wave-*` with agents running makes
// the agents place the tasks through Redis; the mapping must equal the pure simulation in
// mappers/ for the same profiles and seed. Profiles are frozen after the bootstrap (refresh and
// resource interval of an hour) so both sides see the same numbers. A short bootstrap (sizes up to
// 1 MB, 2 rounds) is enough: what is compared is two placements from the same numbers.
import { expect } from 'chai';
import { loadApp } from '../../config/app/load.js';
import { mappers, problemFromProfiles } from '../../mappers/index.js';
import { isComplete, readProfileView, readProfiles } from '../../orchestrator/profiles/read.js';
import { runCli } from '../support/cli.js';
import { agentsSuite } from '../support/agents-suite.js';
import { spawnAgent, waitFor } from './agent-procs.js';

const NODES = ['node1', 'node2', 'node3'];

describe('profilers: distributed WAVE on three agents', function () {
  this.timeout(180_000);
  const rig = agentsSuite();

  before(async () => {
    rig.agents = NODES.map((n) => spawnAgent(n, ['--redis', rig.redis.url, '--refresh', '3600', '--resource-interval', '3600', '--probe-sizes', '1,10,100,1000', '--bootstrap-rounds', '2'], { env: rig.env }));
    // Frozen = complete and no link refitted for 3 s (the bootstrap burst is over).
    try {
      await waitFor('frozen profiles', async () => {
        const v = await readProfileView(rig.client);
        const newest = Math.max(...v.snapshot.links.map((l) => l.updatedAt));
        return v.agents.length === 3 && isComplete(v.snapshot, NODES) && Date.now() - newest > 3000;
      }, 90_000, 200);
    } catch (e) {
      for (const a of rig.agents) console.log(`--- ${a.node}\n${a.log()}`);
      throw e;
    }
    for (const app of ['dummy', 'anomaly']) {
      const r = await runCli(['profile', 'exec', app], { env: rig.env, timeoutMs: 120_000 });
      expect(r.code, r.stderr).to.equal(0);
    }
  });

  for (const app of ['dummy', 'anomaly']) {
    for (const mapper of ['wave-greedy', 'wave-random']) {
      for (const seed of [1, 7]) {
        it(`${mapper} (seed ${seed}) on ${app}: the agents' mapping equals the simulation`, async () => {
          const r = await runCli(['map', app, '--mapper', mapper, '--seed', String(seed), '--json'], { env: rig.env });
          expect(r.code, r.stderr).to.equal(0);
          expect(r.stderr).to.match(new RegExp(`${mapper} ran distributed on 3 agent`));
          const got = (JSON.parse(r.stdout) as { mapping: Record<string, string> }).mapping;
          const spec = await loadApp(app);
          const problem = problemFromProfiles(spec, await readProfiles(rig.client), { nodes: NODES });
          const want = mappers[mapper]!(problem, { seed }).mapping;
          expect(got).to.deep.equal(want);
        });
      }
    }
  }

  it('agents, not the home, placed the non-entry tasks', async () => {
    const logs = rig.agents.map((a) => a.log()).join('\n');
    expect(logs).to.match(/WAVE dummy: task0@node1 placed task1 on node\d/);
  });
});
