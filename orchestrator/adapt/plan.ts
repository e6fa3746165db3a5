// A re-mapping plan: the current mapping and the mapper's best one, both evaluated on the
// current models (live link fits, online execution models blended into the profile), so that
// the predicted gain compares like with like. Pure: the caller reads Redis.
import type { MappingRecord } from '../../config/events.js';
import type { AppSpec, Mapping, ProfileSnapshot } from '../../config/types.js';
import { mappers, pooledExecProfiles, problemFromProfiles, simulate, type Problem } from '../../mappers/index.js';
import { blendExecProfiles, fitExecModels, type ExecModel, type ExecRecord } from '../../profilers/models/exec-model.js';

export interface RemapPlan {
  app: string;
  mapper: string;
  before: { mapping: Mapping; makespan: number };
  after: { mapping: Mapping; makespan: number };
  /** (before - after) / before; 1 when the current mapping cannot run (a lost node). */
  gain: number;
  moves: Array<{ task: string; from: string; to: string }>;
  /** Why the current mapping is worse, in words. */
  reason: string;
  /** Tasks of the current mapping on nodes that are gone. */
  lostNodes: string[];
  models: ExecModel[];
  problem: Problem;
}

export interface PlanInput {
  app: AppSpec;
  snapshot: ProfileSnapshot;
  records: ExecRecord[];
  current: MappingRecord;
  mapper: string;
  now?: number;
  seed?: number;
  /** Moves asked for by hand (task -> node): the plan proposes exactly these, evaluated like any. */
  target?: Mapping;
}

/**
 * The mapper a re-map uses unless told otherwise: the one the app was deployed with, else the
 * cluster's. The hub's loop and `jupiter remap` both ask here, so they suggest the same moves.
 */
export function remapMapper(current: Pick<MappingRecord, 'mapper'>, clusterMapper: string): string {
  return mappers[current.mapper] ? current.mapper : clusterMapper;
}

function mapperFn(name: string): (typeof mappers)[string] {
  const fn = mappers[name];
  if (!fn) throw new Error(`unknown mapper ${name}`);
  return fn;
}

export function planRemap(input: PlanInput): RemapPlan {
  const { app, current } = input;
  const models = fitExecModels(input.records, { now: input.now });
  const nodes = [...new Set(input.snapshot.nodes.map((n) => n.node))].filter((n) => n !== 'home');
  // The profiles pooled over alike nodes as a deploy sees them, then what each node was seen doing.
  const snapshot = blendExecProfiles(pooledExecProfiles(app.name, input.snapshot, nodes), app.name, models);
  const problem = problemFromProfiles(app, snapshot, { nodes, poolExec: false });
  const dagMapping: Mapping = {};
  for (const t of app.dagTasks) if (current.mapping[t] !== undefined) dagMapping[t] = current.mapping[t]!;
  // Moves asked for by hand need no mapper: they are evaluated as they are.
  const after = input.target ? simulate(problem, { ...dagMapping, ...input.target }) : mapperFn(input.mapper)(problem, { seed: input.seed ?? 1 });
  const lostNodes = [...new Set(Object.values(dagMapping).filter((n) => !nodes.includes(n)))];
  const complete = app.dagTasks.every((t) => dagMapping[t] !== undefined);
  const beforeMakespan = lostNodes.length === 0 && complete ? simulate(problem, dagMapping).makespan : Infinity;
  const gain = Number.isFinite(beforeMakespan) ? (beforeMakespan > 0 ? (beforeMakespan - after.makespan) / beforeMakespan : 0) : 1;
  const moves = app.dagTasks.filter((t) => dagMapping[t] !== after.mapping[t]).map((t) => ({ task: t, from: dagMapping[t] ?? '-', to: after.mapping[t]! }));
  const reason = input.target
    ? `moves asked for by hand; predicted makespan ${Number.isFinite(beforeMakespan) ? `${beforeMakespan.toFixed(3)} s -> ` : ''}${after.makespan.toFixed(3)} s on the current models`
    : lostNodes.length > 0
    ? `node(s) ${lostNodes.join(', ')} of the current mapping are gone`
    : !complete
      ? 'the current mapping does not place every task'
      : `predicted makespan ${beforeMakespan.toFixed(3)} s -> ${after.makespan.toFixed(3)} s on the current models (${models.length} online model(s))`;
  return { app: app.name, mapper: input.mapper, before: { mapping: dagMapping, makespan: beforeMakespan }, after: { mapping: after.mapping, makespan: after.makespan }, gain, moves, reason, lostNodes, models, problem };
}
