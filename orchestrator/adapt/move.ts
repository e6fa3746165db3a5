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
import { redisKeys } from '../../config/redis-keys.js';
import type { AppSpec, ClusterConfig } from '../../config/types.js';
import { appKeys } from '../../circe/queue/keys.js';
import type { DeploymentRecord } from '../deploy/record.js';
import { relocateTasks } from '../deploy/relocate.js';
import { runtimeError } from '../../config/errors.js';
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

/** The deployment being changed, as the caller read it to make the plan. */
export interface Deployed {
  dep: DeploymentRecord;
  current: MappingRecord;
}

/** Move the plan's tasks live; returns the recorded `remap` event. */
export async function moveTasks(ctx: MoveContext, app: AppSpec, plan: RemapPlan, trigger: RemapEvent['trigger'], { dep, current }: Deployed): Promise<MoveResult> {
  const { redis, cluster } = ctx;
  const prefix = cluster.redisPrefix;
  const moves = plan.moves.filter((m) => current.mapping[m.task] !== m.to);
  const started = Date.now();
  const k = appKeys(prefix, app.name);
  if (moves.length > 0) ctx.log?.(`${app.name}: moving ${moves.map((m) => `${m.task} ${m.from}->${m.to}`).join(', ')}`);
  await relocateTasks(ctx, app, dep, current, plan.problem, Object.fromEntries(moves.map((m) => [m.task, m.to])), {
    suffix: '+remap', moveGraceSec: MOVE_GRACE_SEC, started: () => waitMoved(redis, k.ready, moves),
  });
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
