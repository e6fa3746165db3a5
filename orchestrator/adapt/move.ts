// A live re-map: move tasks of a running deployment to other nodes while items stream.
// Per moved task, the runtime stops the runner on the old node gracefully (it finishes the item
// in hand and returns the jobs it prefetched to the queue) and starts one on the new node, which
// consumes the same queue: a task's queue lives in Redis, not on its node, so nothing has to be
// copied, and a job the old runner still held when the new one started goes back to the queue
// and runs again, which the done markers and the deterministic output ids make harmless (outputs
// stay exactly-once at the sink). On the direct data path the old node's runner keeps serving
// what it stored until its receivers took it (A moving; circe/dataplane DRAIN_MS). Then the new
// mapping is written where `status`, the dashboard and the next re-map read it, and the move is
// a `remap` event.
import type { Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import { runtimeError } from '../../config/errors.js';
import { redisKeys } from '../../config/redis-keys.js';
import type { AppSpec, ClusterConfig, Mapping } from '../../config/types.js';
import { simulate } from '../../mappers/index.js';
import { appKeys } from '../../circe/queue/keys.js';
import { readDeployment, readMapping } from '../deploy/record.js';
import { runtimeFor } from '../deploy/runtimes.js';
import { usePrivateEngine } from '../stack/dockerd.js';
import { readStackState, stateDir } from '../stack/state.js';
import { recordRemap, remapEvent, type RemapEvent } from './events.js';
import type { RemapPlan } from './plan.js';

/** Grace a moving runner gets to finish its item and hand over its stored files (s). */
export const MOVE_GRACE_SEC = 20;
/** How long the new runners may take to consume their queues. */
const READY_TIMEOUT_MS = 120_000;

export interface MoveContext {
  redis: Redis;
  cluster: ClusterConfig;
  /** The Redis URL the runners use (the deployment's). */
  redisUrl: string;
  log?: (line: string) => void;
}

export interface MoveResult {
  event: RemapEvent;
  /** Wall time from the first stop to every moved runner consuming again (ms). */
  movedMs: number;
}

/** Move the plan's tasks live; returns the recorded `remap` event. */
export async function moveTasks(ctx: MoveContext, app: AppSpec, plan: RemapPlan, trigger: RemapEvent['trigger']): Promise<MoveResult> {
  const { redis, cluster } = ctx;
  const prefix = cluster.redisPrefix;
  const dep = await readDeployment(redis, prefix, app.name);
  const current = await readMapping(redis, prefix, app.name);
  if (!dep || !current) throw runtimeError(`${app.name} is not deployed: nothing to move`, { hint: `jupiter deploy ${app.name}` });
  const moves = plan.moves.filter((m) => current.mapping[m.task] !== m.to);
  const started = Date.now();
  if (moves.length > 0) {
    ctx.log?.(`${app.name}: moving ${moves.map((m) => `${m.task} ${m.from}->${m.to}`).join(', ')}`);
    const k = appKeys(prefix, app.name);
    // While set, a runner that stops serves what it stored until taken (bounded; expires).
    await redis.set(k.moving, JSON.stringify(moves), 'EX', MOVE_GRACE_SEC * 3);
    const runtime = runtimeFor(dep.runtime);
    usePrivateEngine(cluster, readStackState(stateDir(cluster.stateDir)));
    await runtime.start(app, moves.map((m) => ({
      app: app.name, task: m.task, node: m.to, runId: dep.runId, redisUrl: ctx.redisUrl, redisPrefix: prefix,
    })), cluster, { moveGraceSec: MOVE_GRACE_SEC });
    await waitMoved(redis, k.ready, moves);
  }
  const mapping: Mapping = { ...current.mapping, ...Object.fromEntries(moves.map((m) => [m.task, m.to])) };
  const sim = simulate(plan.problem, Object.fromEntries(app.dagTasks.map((t) => [t, mapping[t]!])));
  const next: MappingRecord = {
    ...current,
    mapping,
    mapper: current.mapper.endsWith('+remap') ? current.mapper : `${current.mapper}+remap`,
    predictedMakespan: sim.makespan,
    schedule: Object.entries(sim.schedule).map(([task, s]) => ({ task, node: s.node, start: s.start, finish: s.finish })),
    ts: Date.now(),
  };
  await redis.set(redisKeys(prefix).mapping(app.name), JSON.stringify(next));
  const event = remapEvent({ ...plan, moves }, 'remap', trigger);
  await recordRemap(redis, redisKeys(prefix), event);
  return { event, movedMs: Date.now() - started };
}

/** Until every moved task's runner on its new node says it consumes its queue. */
async function waitMoved(redis: Redis, readyKey: string, moves: Array<{ task: string; to: string }>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ready = await redis.hmget(readyKey, ...moves.map((m) => m.task));
    const missing = moves.filter((m, i) => {
      const r = ready[i];
      return !r || (JSON.parse(r) as { node?: string }).node !== m.to;
    });
    if (missing.length === 0) return;
    if (Date.now() > deadline) {
      throw runtimeError(`the runner(s) of ${missing.map((m) => `${m.task}@${m.to}`).join(', ')} did not start within ${READY_TIMEOUT_MS / 1000} s`, { hint: 'see `jupiter logs <app> <task>`' });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
