// Testbed topologies: the uplink rule, explicit links, presets, and file:line errors.
import { expect } from 'chai';
import { cpus } from 'node:os';
import { formatRate, parseRate, parseTopologyText } from '../../config/testbed/topology.js';
import { presetTopology } from '../../orchestrator/testbed/presets.js';
import type { JupiterError } from '../../config/errors.js';
import { testbedClusterConfig } from '../../orchestrator/testbed/cluster-config.js';
import type { TestbedState } from '../../orchestrator/testbed/state.js';

function errorOf(text: string): JupiterError {
  try {
    parseTopologyText(text, 'topo.json');
  } catch (e) {
    return e as JupiterError;
  }
  throw new Error('no error');
}

describe('testbed topology', () => {
  it('rates: tc units, 10^3 multiples; out of range is undefined', () => {
    expect(parseRate('20mbit')).to.equal(20e6);
    expect(parseRate('1gbit')).to.equal(1e9);
    expect(parseRate('500kbit')).to.equal(5e5);
    expect(parseRate('1kbit')).to.equal(undefined);
    expect(parseRate('20 parsecs')).to.equal(undefined);
    expect(formatRate(1e9)).to.equal('1gbit');
    expect(formatRate(2.5e6)).to.equal('2.5mbit');
  });

  it('a pair runs at the slower uplink unless a link says otherwise (both ways, or one way)', () => {
    const t = parseTopologyText(JSON.stringify({
      home: { uplink: '10mbit' },
      defaults: { uplink: '100mbit', cpus: 1 },
      hosts: [{ name: 'e1', uplink: '20mbit', cpus: 0.5 }, { name: 'f1' }, { name: 'c1', uplink: '1gbit' }],
      links: [{ between: ['f1', 'c1'], rate: '300mbit' }, { between: ['e1', 'c1'], rate: '5mbit', oneWay: true }],
    }), 'topo.json');
    expect(t.hosts.map((h) => [h.name, h.uplinkBps, h.cpus])).to.deep.equal([['home', 10e6, undefined], ['e1', 20e6, 0.5], ['f1', 100e6, 1], ['c1', 1e9, 1]]);
    expect(t.rates.home!.c1).to.equal(10e6);
    expect(t.rates.e1!.f1).to.equal(20e6);
    expect(t.rates.f1!.c1).to.equal(300e6);
    expect(t.rates.c1!.f1).to.equal(300e6);
    expect(t.rates.e1!.c1).to.equal(5e6);
    expect(t.rates.c1!.e1).to.equal(20e6);
  });

  it('presets: edge-fog-cloud and mesh-N', () => {
    const efc = presetTopology('edge-fog-cloud')!;
    expect(efc.hosts.map((h) => h.name)).to.deep.equal(['home', 'edge1', 'edge2', 'edge3', 'edge4', 'fog1', 'fog2', 'cloud1']);
    expect(efc.rates.edge1!.home).to.equal(10e6);
    expect(efc.rates.fog1!.cloud1).to.equal(100e6);
    expect(efc.rates.edge2!.fog2).to.equal(20e6);
    expect(presetTopology('mesh-16')!.hosts.length).to.equal(17);
    expect(presetTopology('ring-3')).to.equal(undefined);
    expect(() => presetTopology('mesh-1')).to.throw(/2 to 64 hosts/);
  });

  it('the generated cluster configuration declares each host\'s CPU limit (its containers cannot see a parent cgroup)', () => {
    const host = (name: string, cpus?: number) => ({
      name, ns: `ns-${name}`, addr: `10.9.0.${name.length}`, outer: 'o', inner: 'i', classMinor: 1, uplinkBps: 1e6,
      ...(cpus !== undefined ? { cpus } : {}),
      ...(name === 'home' ? {} : { engine: { pid: 1, socket: `/run/x/${name}/docker.sock`, dataRoot: 'd', execRoot: 'e', log: 'l' } }),
    });
    const state = { hosts: [host('home'), host('edge1', 0.5), host('cloud1', 2), host('any')], redis: { url: 'redis://:pw@10.9.0.1:6379' } } as unknown as TestbedState;
    const c = testbedClusterConfig(state);
    // A host without a limit may use all of the machine's cores (its agent would read only its container's own).
    expect(c.nodes!.map((n) => [n.name, n.cpus])).to.deep.equal([['home', undefined], ['edge1', 0.5], ['cloud1', 2], ['any', cpus().length]]);
    expect(c.docker).to.deep.equal({ cpus: 0.5 });
  });

  it('errors name the file and line of the bad entry', () => {
    const dup = errorOf('{\n  "hosts": [\n    { "name": "x1" },\n    { "name": "x1" }\n  ]\n}\n');
    expect(dup.format()).to.match(/^topo\.json:4: host x1 is listed twice/);
    const link = errorOf('{\n  "hosts": [{ "name": "x1" }, { "name": "x2" }],\n  "links": [\n    { "between": ["x1", "x2"], "rate": "1mbit" },\n    { "between": ["x1", "zz"], "rate": "1mbit" }\n  ]\n}\n');
    expect(link.format()).to.match(/^topo\.json:5: link x1 - zz: no host zz/);
    const key = errorOf('{\n  "hosts": [{ "name": "x1" }],\n  "latency": "5ms"\n}\n');
    expect(key.format()).to.match(/^topo\.json:3: the top level: unknown key "latency"/);
    const home = errorOf('{ "hosts": [{ "name": "home" }] }');
    expect(home.message).to.match(/reserved for the home/);
    expect(errorOf('{ "hosts": [ }').exitCode).to.equal(2);
  });
});
