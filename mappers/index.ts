// Public surface of the mappers: the registry and everything callers need around it.
import type { Mapper } from './result.js';
import { heft } from './algorithms/heft.js';
import { heftBalanced } from './algorithms/heft-balanced.js';
import { heftDup } from './algorithms/heft-dup.js';
import { cpop } from './algorithms/cpop.js';
import { peft } from './algorithms/peft.js';
import { fastestNode } from './algorithms/fastest-node.js';
import { waveGreedy } from './algorithms/wave-greedy.js';
import { waveRandom } from './algorithms/wave-random.js';
import { makeBest } from './algorithms/best.js';

export type { Problem, ProblemEdge, ProblemLink, ProblemNode, LinkModel, QuadraticLink, LatencyBandwidthLink } from './problem.js';
export { validateProblem, problemErrors, problemSchema, linkFromDrupeMsKbit, quadraticOf } from './problem.js';
export type { MapResult, MapperOptions, Mapper, Slot, DuplicateSlot } from './result.js';
export { simulate } from './simulate.js';
export type { SimPolicy } from './simulate.js';
export { checkSchedule } from './check.js';
export type { CheckReport } from './check.js';
export { problemFromProfiles, placeHelperTasks, pooledExecProfiles } from './from-profiles.js';
export type { FromProfilesOptions } from './from-profiles.js';
export { controlRelation, chooseNodeGreedy, chooseNodeRandom, viewOf, candidatesOf, GREEDY_THRESHOLD, GREEDY_PENALTY_SEC } from './wave.js';
export type { ControlRelation, GreedyView } from './wave.js';
export { createRng, rngFor, deriveSeed } from './prng.js';
export type { Rng } from './prng.js';
export { upwardRanks, downwardRanks } from './ranks.js';
export { compile } from './compile.js';
export { ganttText } from './gantt.js';
export { repairMapping } from './repair.js';
export type { RepairResult } from './repair.js';

const singles: Record<string, Mapper> = {
  heft,
  'heft-balanced': heftBalanced,
  'heft-dup': heftDup,
  cpop,
  peft,
  'fastest-node': fastestNode,
  'wave-greedy': waveGreedy,
  'wave-random': waveRandom,
};

const best = makeBest(() => Object.values(singles));

/** name -> mapper; every mapper is pure and deterministic for a given seed (best: and budget). */
export const mappers: Readonly<Record<string, Mapper>> = Object.freeze({ ...singles, best });

const descriptions: Record<string, string> = {
  heft: 'HEFT (Topcuoglu 2002): upward rank, insertion-based earliest finish time',
  'heft-balanced': 'HEFT with at most K tasks per node (default 2, as MAX_TASK_ALLOWED)',
  'heft-dup': 'HEFT plus duplication of the critical predecessor',
  cpop: 'CPOP (Topcuoglu 2002): critical path on one node, the rest by EFT',
  peft: 'PEFT (Arabnejad 2014): optimistic cost table lookahead',
  'fastest-node': 'everything on the node with the smallest total execution time',
  'wave-greedy': 'WAVE greedy: distributed, link delay + cpu% + mem% per controller',
  'wave-random': 'WAVE random: distributed, uniform random node (seeded)',
  best: 'portfolio of all mappers + simulator-driven local search (time budget)',
};

export function listMappers(): Array<{ name: string; description: string }> {
  return Object.keys(mappers).map((name) => ({ name, description: descriptions[name] ?? '' }));
}
export { heftPaperInstance, randomDagShape } from './generators/random-dag.js';
export type { HeftPaperParams } from './generators/random-dag.js';
export { fogInstance } from './generators/fog.js';
export type { FogParams } from './generators/fog.js';
