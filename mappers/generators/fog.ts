// Fog/edge networks in the style of iFogSim / RIoTBench settings (as SAGA's riotbench data):
// edge devices (1000 MIPS), fog nodes (2800 MIPS), cloud (44800 MIPS); links edge-fog 100 Mbit/s,
// fog-fog 1 Gbit/s, fog-cloud 10 Mbit/s (the slow uplink), cloud-cloud 10 Gbit/s. Each edge device
// hangs off one fog node; a pair's link is the path through the tree: latencies add up and the
// slowest hop sets the bandwidth. Speeds and bandwidths get +-10% noise. Entry tasks are pinned to
// edge devices (the sensors produce the data there), everything else can run anywhere.
import type { Problem } from '../problem.js';
import { createRng } from '../prng.js';
import { randomDagShape } from './random-dag.js';

export interface FogParams {
  v: number;
  alpha: number;
  outDegree: number;
  edge: number;
  fog: number;
  cloud: number;
  seed: number;
  /** Mean work per task in million instructions (default 2000: 2 s on an edge device). */
  meanWorkMi?: number;
  /** Mean data per edge in bytes (default 2 MB). */
  meanBytes?: number;
}

type Tier = 'edge' | 'fog' | 'cloud';
const MIPS: Record<Tier, number> = { edge: 1000, fog: 2800, cloud: 44800 };
const MBIT = 125_000;
const HOP: Record<string, { lat: number; bw: number }> = {
  'edge-fog': { lat: 0.005, bw: 100 * MBIT },
  'fog-fog': { lat: 0.01, bw: 1000 * MBIT },
  'fog-cloud': { lat: 0.05, bw: 10 * MBIT },
  'cloud-cloud': { lat: 0.001, bw: 10000 * MBIT },
};

export function fogInstance(params: FogParams): Problem {
  const rng = createRng(params.seed);
  const noise = (): number => rng.range(0.9, 1.1);
  const nodes: Array<{ name: string; tier: Tier; fog: number; mips: number }> = [];
  for (let i = 0; i < params.edge; i++) nodes.push({ name: `edge${i}`, tier: 'edge', fog: i % Math.max(1, params.fog), mips: MIPS.edge * noise() });
  for (let i = 0; i < params.fog; i++) nodes.push({ name: `fog${i}`, tier: 'fog', fog: i, mips: MIPS.fog * noise() });
  for (let i = 0; i < params.cloud; i++) nodes.push({ name: `cloud${i}`, tier: 'cloud', fog: -1, mips: MIPS.cloud * noise() });

  // Path from a node up to the "fog layer": list of hops.
  const up = (n: (typeof nodes)[number]): string[] => (n.tier === 'edge' ? ['edge-fog'] : []);
  const links: Problem['links'] = [];
  for (const a of nodes) {
    for (const b of nodes) {
      if (a === b) continue;
      const hops = [...up(a), ...up(b)];
      if (a.tier === 'cloud' && b.tier === 'cloud') hops.push('cloud-cloud');
      else if (a.tier === 'cloud' || b.tier === 'cloud') hops.push('fog-cloud');
      else if (a.fog !== b.fog) hops.push('fog-fog');
      const lat = hops.reduce((s, h) => s + (HOP[h] as { lat: number }).lat, 0);
      const bw = Math.min(...hops.map((h) => (HOP[h] as { bw: number }).bw)) * noise();
      links.push({ from: a.name, to: b.name, model: { latencySec: lat, bandwidthBytesPerSec: bw } });
    }
  }

  const shape = randomDagShape(rng, params.v, params.alpha, params.outDegree);
  const tasks = Array.from({ length: params.v }, (_, i) => `t${i}`);
  const meanWork = params.meanWorkMi ?? 2000;
  const meanBytes = params.meanBytes ?? 2e6;
  const hasParent = new Set(shape.edges.map(([, c]) => c));
  const edgeNodes = nodes.filter((n) => n.tier === 'edge');
  const exec: Problem['exec'] = {};
  const entryNodes: Record<string, string> = {};
  tasks.forEach((t, i) => {
    const work = rng.range(0.2, 1.8) * meanWork;
    if (!hasParent.has(i) && edgeNodes.length) {
      const src = edgeNodes[rng.int(edgeNodes.length)] as (typeof nodes)[number];
      exec[t] = { [src.name]: work / src.mips };
      entryNodes[t] = src.name;
    } else {
      exec[t] = Object.fromEntries(nodes.map((n) => [n.name, work / n.mips]));
    }
  });
  const edges = shape.edges.map(([a, b]) => ({ from: tasks[a] as string, to: tasks[b] as string, bytes: Math.round(rng.range(0, 2) * meanBytes) }));
  return {
    tasks,
    edges,
    nodes: nodes.map((n) => ({ name: n.name, cpuPercent: Math.round(rng.range(5, 80)), memPercent: Math.round(rng.range(10, 70)) })),
    exec,
    links,
    entryNodes,
  };
}
