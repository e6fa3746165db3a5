// Ready-made topologies: `edge-fog-cloud` (a dispersed deployment's three tiers behind a slow
// home) and `mesh-N` (N identical hosts, every pair at the same rate).
import { inputError } from '../../config/errors.js';
import { resolveTopology, type Topology } from '../../config/testbed/topology.js';
import type { TopologyFile } from '../../config/schemas/testbed-topology.js';

export const MESH_UPLINK = '50mbit';

const EDGE_FOG_CLOUD: TopologyFile = {
  name: 'edge-fog-cloud',
  home: { uplink: '10mbit' },
  hosts: [
    ...[1, 2, 3, 4].map((i) => ({ name: `edge${i}`, uplink: '20mbit', cpus: 0.5 })),
    ...[1, 2].map((i) => ({ name: `fog${i}`, uplink: '100mbit', cpus: 1 })),
    { name: 'cloud1', uplink: '1gbit', cpus: 2 },
  ],
};

export const PRESETS = ['edge-fog-cloud', 'mesh-N (N = 2..64)'];

/** The preset of that name, or undefined when `name` names none. */
export function presetTopology(name: string): Topology | undefined {
  if (name === 'edge-fog-cloud') return resolveTopology(EDGE_FOG_CLOUD, name);
  const m = /^mesh-(\d+)$/.exec(name);
  if (!m) return undefined;
  const n = Number(m[1]);
  if (n < 2 || n > 64) throw inputError(`${name}: a mesh has 2 to 64 hosts`, { hint: 'e.g. mesh-4 or mesh-16; write a topology file for other sizes' });
  const hosts = Array.from({ length: n }, (_, i) => ({ name: `node${i + 1}` }));
  return resolveTopology({ name, defaults: { uplink: MESH_UPLINK }, hosts }, name);
}
