// `jupiter profile --wait N` (issue 15, point 14): "complete" means every node of the cluster
// configuration has a live agent and every link between them a fit, not just the agents that
// happen to have registered. One real agent of three configured nodes: the wait ends incomplete
// (exit 1, naming what is missing); with all three it ends complete.
import { expect } from 'chai';
import { runCli } from '../support/cli.js';
import { agentsSuite } from '../support/agents-suite.js';
import { readProfileView } from '../../orchestrator/profiles/read.js';
import { spawnAgent, waitFor } from './agent-procs.js';

describe('jupiter profile --wait: complete means every configured node and link', function () {
  this.timeout(60_000);
  // The embedded default cluster: node1, node2, node3.
  const rig = agentsSuite({ JUPITER_CONFIG: '' });

  it('is not complete with one registered agent of three; it is once all three have fitted links', async () => {
    rig.agents.push(spawnAgent('node1', ['--redis', rig.redis.url], { env: rig.env }));
    await waitFor('node1 to register with resources', async () => {
      const v = await readProfileView(rig.client);
      return v.snapshot.nodes.some((n) => n.node === 'node1');
    }, 20_000);
    const one = await runCli(['profile', '--wait', '1'], { env: rig.env });
    expect(one.code, one.stdout).to.equal(1);
    expect(one.stderr).to.match(/the profile is not complete after 1 s: no live agent on node2, node3; 6 of 6 link\(s\) not fitted/);
    expect(one.stdout).to.not.include('profile complete');

    rig.agents.push(...['node2', 'node3'].map((n) => spawnAgent(n, ['--redis', rig.redis.url], { env: rig.env })));
    const all = await runCli(['profile', '--wait', '40'], { env: rig.env, timeoutMs: 50_000 });
    expect(all.code, all.stderr).to.equal(0);
    expect(all.stdout).to.include('profile complete: 3 node(s), 6 link(s) fitted');
  });
});
