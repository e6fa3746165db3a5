// Which node host runs each Python task of a node (process runtime): even spread, running tasks
// stay where they are, and the host count comes from JUPITER_NODE_HOSTS or the cores.
import { expect } from 'chai';
import { availableParallelism } from 'node:os';
import { assignHosts, hostKey, hostsPerNode, OWN_HOST_TASKS } from '../../circe/runtime/process.js';

describe('circe process runtime: tasks spread over a node\'s hosts', () => {
  it('spreads new tasks evenly, lowest host first on a tie', () => {
    const where = assignHosts(new Map(), ['a', 'b', 'c', 'd', 'e'], 2);
    expect([...where]).to.deep.equal([['a', 0], ['b', 1], ['c', 0], ['d', 1], ['e', 0]]);
  });

  it('keeps a running task on its host and fills the emptiest host with the new ones', () => {
    const current = new Map([[0, ['a', 'b', 'c']], [1, ['d']]]);
    const where = assignHosts(current, ['b', 'x', 'y', 'z'], 3);
    expect([...where]).to.deep.equal([['b', 0], ['x', 2], ['y', 1], ['z', 2]]);
  });

  it('names the first host after the node and the others <node>+<k>', () => {
    expect([hostKey('node1', 0), hostKey('node1', 2)]).to.deep.equal(['node1', 'node1+2']);
  });

  it('hosts per node: one per task for a few tasks, one per core for many, or JUPITER_NODE_HOSTS (0: none)', () => {
    const before = process.env.JUPITER_NODE_HOSTS;
    try {
      delete process.env.JUPITER_NODE_HOSTS;
      expect([1, 3, OWN_HOST_TASKS].map(hostsPerNode)).to.deep.equal([1, 3, OWN_HOST_TASKS]);
      expect(hostsPerNode(OWN_HOST_TASKS + 1)).to.equal(availableParallelism());
      process.env.JUPITER_NODE_HOSTS = '3';
      expect(hostsPerNode(10)).to.equal(3);
      process.env.JUPITER_NODE_HOSTS = '0';
      expect(hostsPerNode(10)).to.equal(0);
    } finally {
      if (before === undefined) delete process.env.JUPITER_NODE_HOSTS;
      else process.env.JUPITER_NODE_HOSTS = before;
    }
  });
});
