// The last step of deliveries at a runner: one round trip for a group of finished deliveries.
// One COMMIT script for the items that ran (outputs, done markers, runtimes, events, freed
// inputs), the finishes of duplicates and of join inputs that wait, and the jobs carrying every
// output right behind them in the same pipeline (Redis runs the commit before the adds).
import type { ChainableCommander } from 'ioredis';
import type { TaskEvent } from '../../config/events.js';
import { queueLineage, type LineageCall } from '../dataplane/lineage.js';
import { addEvent } from '../queue/events.js';
import type { ScriptedPipeline, StoredInput } from '../queue/failures.js';
import { quietKeys, type AppKeys } from '../queue/keys.js';
import type { ScriptedRedis } from '../queue/scripts.js';
import type { PipelineSettings } from '../queue/settings.js';
import { execOrThrow, setApart, type AppQueues, type QueuedJob, type Staged } from '../queue/transport.js';
import type { InHand } from './arrive.js';
import { pipeline } from '../queue/pipeline.js';

/** What a delivery leaves to the commit group: its run's results, or only its finish. */
export type Settle =
  | (InHand & { kind: 'run'; inputs: StoredInput[]; names: string[]; start: number; finish: number; jobs: QueuedJob[]; outputs: number; stageArgs: Array<string | Buffer | number>; staged: Staged[]; bytes: number; announced: boolean; lineage?: LineageCall; stored: string[] })
  | (InHand & { kind: 'dup'; outbox: QueuedJob[] })
  | (InHand & { kind: 'wait' });

export interface CommitContext {
  redis: ScriptedRedis;
  keys: AppKeys;
  queues: AppQueues;
  settings: PipelineSettings;
  task: string;
  node: string;
  event(type: TaskEvent['type'], item: string, ts: number, extra?: Partial<TaskEvent>): TaskEvent;
  /** Commands that ride along at the end of the commit's pipeline (whose replies nobody reads). */
  rideAlong?(pipe: ChainableCommander): void;
}

/** Commit a group; returns each item's makespan (-1 while the item is still in flight). */
export async function commitGroup(ctx: CommitContext, group: Settle[]): Promise<number[]> {
  const { keys: k, task: T, settings } = ctx;
  const maxLen = settings.eventsMaxLen;
  const pipe = pipeline(ctx.redis) as ScriptedPipeline & { jCommit(...a: Array<string | number | Buffer>): ScriptedPipeline };
  const runs = group.filter((s): s is Extract<Settle, { kind: 'run' }> => s.kind === 'run');
  const adds: QueuedJob[] = [];
  // Large outputs' bytes by plain SETs (see COMMIT) under keys of their run alone, sent ahead of
  // the pipeline (transport.ts setApart). Direct path: the runs' lineage records first in it
  // (Redis has them before their commits, see circe/dataplane/lineage.ts); their replies come
  // before the rest.
  const staged = setApart(ctx.redis, runs.flatMap((r) => r.staged.map((st) => ({ key: st.key, bytes: st.bytes, ttlSec: settings.doneTtlSec }))));
  staged.catch(() => undefined); // awaited below; handled now in case building the pipeline throws first
  const lineage = runs.flatMap((r) => (r.lineage ? [r.lineage] : []));
  queueLineage(pipe, lineage);
  let at = lineage.length;
  if (runs.length > 0) {
    const keys: string[] = [k.stats, k.events, k.makespans];
    const args: Array<string | number | Buffer> = [settings.doneTtlSec, T, ctx.node, maxLen, Date.now(), k.blob(''), k.queued(''), k.app];
    for (const r of runs) {
      const item = r.d.item;
      keys.push(k.done(T, item), k.join(T, item), k.rt(item), k.pending(item), k.item(item));
      // Fast items report enter and start here; a slow one announced them while it ran.
      const events = [
        ...(r.announced ? [] : [ctx.event('enter', item, r.at), ctx.event('start', item, r.start)]),
        ctx.event('finish', item, r.finish, { durationMs: r.finish - r.start }),
      ];
      args.push(r.start, r.finish, r.names.join(';'), r.d.id, JSON.stringify(r.jobs), r.at, events.length, ...events.map((e) => JSON.stringify(e)));
      args.push(r.inputs.length, ...r.inputs.flatMap((inp) => [inp.blob, inp.id]));
      args.push(r.outputs, ...r.stageArgs);
      adds.push(...r.jobs);
    }
    pipe.jCommit(keys.length, ...keys, ...args);
  }
  const now = Date.now();
  for (const s of group) {
    if (s.kind === 'run') continue;
    const d = s.d;
    if (s.kind === 'dup') {
      adds.push(...s.outbox.map((j) => ({ queue: j.queue, d: { ...j.d, resent: true } })));
      pipe.jRelease(k.blob(''), d.blob, d.id);
      pipe.hincrby(k.stats, `dup:${T}`, 1);
    } else {
      addEvent(pipe, k, maxLen, ctx.event('enter', d.item, s.at));
    }
    pipe.jFinish(k.pending(d.item), k.item(d.item), k.stats, k.makespans, k.queued(T), d.id, now, maxLen, k.app);
  }
  // Input bytes of each run beside its runtimes, for the online execution models
  // (orchestrator/adapt); queued last so the replies above keep their positions.
  for (const r of runs) pipe.hset(k.rt(r.d.item), `${T}|in`, r.inputs.reduce((a, inp) => a + (inp.size ?? 0), 0));
  ctx.rideAlong?.(pipe);
  // Its reply unread: this queue's stale wake-up marker (scripts.ts QUIET).
  pipe.jQuiet(...quietKeys(k, T));
  // Last, in the same write: the jobs carrying the outputs (Redis runs the commit first).
  const checkAdds = await ctx.queues.addTo(pipe, adds);
  const [out] = await Promise.all([execOrThrow(pipe), staged]);
  checkAdds(out);
  const committed = runs.length > 0 ? (out[at++] as number[]) : [];
  let r = 0;
  return group.map((s) => {
    if (s.kind === 'run') return Number(committed[r++]);
    at += s.kind === 'dup' ? 3 : 2;
    return Number(out[at - 1]);
  });
}
