// Moving tasks of a running deployment to other nodes: start their runners there and write the
// new placement where `status`, the dashboard and the next re-map read it. Shared by the two
// movers: the reconciler (heal/reconciler.ts: tasks of a lost node, mapper suffix `+repair`) and
// the live re-map (adapt/move.ts: `+remap`, with a grace for the runner leaving its node).
import type { Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import type { AppSpec, ClusterConfig, Mapping } from '../../config/types.js';
import { simulate, type Problem } from '../../mappers/index.js';
import { appKeys } from '../../circe/queue/keys.js';
import { usePrivateEngine } from '../stack/dockerd.js';
import { readStackState, stateDir } from '../stack/state.js';
import { addMapping, type DeploymentRecord } from './record.js';
import { runtimeFor } from './runtimes.js';

export interface RelocateContext {
  redis: Redis;
  cluster: ClusterConfig;
  /** The Redis URL the runners use (the deployment's). */
  redisUrl: string;
}

export interface RelocateOptions {
  /** Appended once to the mapper's name in the placement record. */
  suffix: '+remap' | '+repair';
  /** Grace the runner a task leaves gets to finish its item and hand over what it stored (runtime stop; s). */
  moveGraceSec?: number;
  /** Runs after the new runners were started, before the placement is written (wait for them). */
  started?: () => Promise<void>;
}

/** Start the runners of `moved` (task -> new node) and write the placement; returns the new record. */
export async function relocateTasks(ctx: RelocateContext, app: AppSpec, dep: DeploymentRecord, current: MappingRecord, problem: Problem, moved: Mapping, opts: RelocateOptions): Promise<MappingRecord> {
  const { redis, cluster } = ctx;
  const prefix = cluster.redisPrefix;
  const tasks = Object.keys(moved);
  if (tasks.length > 0) {
    if (opts.moveGraceSec !== undefined) {
      // While set, a runner that stops serves what it stored until taken (bounded; expires), so
      // that its receivers need not make it again: the old runner may well be alive (a live
      // re-map; a node whose agent died while its runners went on).
      const moves = tasks.map((task) => ({ task, from: current.mapping[task], to: moved[task] }));
      await redis.set(appKeys(prefix, app.name).moving, JSON.stringify(moves), 'EX', opts.moveGraceSec * 3);
    }
    const runtime = runtimeFor(dep.runtime);
    // A private engine the stack started after this hub did: local nodes' containers live there.
    usePrivateEngine(cluster, readStackState(stateDir(cluster.stateDir)));
    await runtime.start(app, tasks.map((task) => ({
      app: app.name, task, node: moved[task]!, runId: dep.runId, redisUrl: ctx.redisUrl, redisPrefix: prefix,
    })), cluster, { moveGraceSec: opts.moveGraceSec });
    await opts.started?.();
  }
  const mapping: Mapping = { ...current.mapping, ...moved };
  const sim = simulate(problem, Object.fromEntries(app.dagTasks.map((t) => [t, mapping[t]!])));
  const next: MappingRecord = {
    ...current,
    mapping,
    mapper: current.mapper.endsWith(opts.suffix) ? current.mapper : `${current.mapper}${opts.suffix}`,
    predictedMakespan: sim.makespan,
    schedule: Object.entries(sim.schedule).map(([task, s]) => ({ task, node: s.node, start: s.start, finish: s.finish })),
    ts: Date.now(),
  };
  await addMapping(redis.multi(), prefix, next).exec();
  return next;
}
