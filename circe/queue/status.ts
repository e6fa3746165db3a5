// Status data of a deployed app for `jupiter status`: queue depths, counts, makespans, dead letters.
import type { ChainableCommander, Redis } from 'ioredis';
import type { AppSpec } from '../../config/types.js';
import type { DeadLetter } from './failures.js';
import { appKeys, bullKey, SINK_QUEUE } from './keys.js';
import { execOrThrow } from './transport.js';
import { pipeline } from './pipeline.js';

/** Depths count files (one job can carry several). */
export interface TaskStatus {
  task: string;
  /** In the queue, not yet taken by the runner. */
  waiting: number;
  /** Held by the runner: running, prefetched, or read and about to run. */
  active: number;
  /** Waiting for a retry after the task failed on them. */
  delayed: number;
  processed: number;
  /** Items dead-lettered at this task. */
  failed: number;
  retried: number;
  /** Redelivered copies recognised and dropped. */
  duplicates: number;
}

export interface AppStatus {
  app: string;
  tasks: TaskStatus[];
  sink: { waiting: number; active: number; delivered: number; duplicatesSuppressed: number; failed: number };
  items: { submitted: number; done: number; inFlight: number };
  makespan: { count: number; p50Ms?: number; p95Ms?: number; meanMs?: number };
  /** Newest first. */
  deadLetters: DeadLetter[];
  deadLetterCount: number;
}

/**
 * Files sent to each task of the app (and to the sink `home`) and not yet finished there: waiting,
 * delayed for a retry, or held by the runner (running or prefetched), counted per file whatever
 * the jobs that carry them. One round trip, in which Redis reads every set at the same instant.
 */
export async function queueDepths(redis: Redis, prefix: string, app: AppSpec): Promise<Record<string, number>> {
  const p = pipeline(redis);
  const depths = readDepths(p, prefix, app);
  return depths(await execOrThrow(p), 0);
}

/**
 * Queue the reads of queueDepths on a pipeline that carries other reads too; the function
 * returned takes the pipeline's replies and the index of the first of these.
 */
export function readDepths(pipe: ChainableCommander, prefix: string, app: AppSpec): (replies: unknown[], at: number) => Record<string, number> {
  const keys = appKeys(prefix, app.name);
  const names = [...app.dagTasks, SINK_QUEUE];
  for (const n of names) pipe.scard(keys.queued(n));
  return (replies, at) => Object.fromEntries(names.map((n, i) => [n, Number(replies[at + i])]));
}

export function percentile(sorted: number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * Everything in two round trips on the caller's connection, whatever the number of tasks: the
 * queue sets, BullMQ's active lists and delayed sets and our counters in one pipeline, then the
 * few jobs the runners hold. Read straight from BullMQ's keys (`<queuePrefix>:<task>:active`,
 * `:delayed`, the job hash's `data`) rather than through a Queue object per task: those cost
 * CPU and a round trip or more each, which with 10 apps of 20 tasks made `status` take seconds.
 */
export async function getStatus(redis: Redis, prefix: string, app: AppSpec, opts: { deadLetters?: number } = {}): Promise<AppStatus> {
  const k = appKeys(prefix, app.name);
  const names = [...app.dagTasks, SINK_QUEUE];
  const q = (name: string, type: string): string => bullKey(k, name, type);
  const p = pipeline(redis)
    .hgetall(k.stats)
    .lrange(k.makespans, 0, -1)
    .lrange(k.deadLetters, 0, (opts.deadLetters ?? 20) - 1)
    .llen(k.deadLetters);
  for (const n of names) p.scard(k.queued(n)).lrange(q(n, 'active'), 0, -1).zcard(q(n, 'delayed'));
  const r = await execOrThrow(p);
  const [stats, spans, letters, nLetters] = r.slice(0, 4) as [Record<string, string>, string[], string[], number];
  const per = names.map((_, i) => r.slice(4 + 3 * i, 7 + 3 * i) as [number, string[], number]);
  // Files queued per task (exact), split by the jobs that hold them: the runner holds a few
  // jobs at most, and a delayed job is a single retried file.
  const heldIds = per.flatMap(([, active], i) => active.map((id) => q(names[i]!, id)));
  const held = names.map(() => 0);
  if (heldIds.length > 0) {
    const data = (await execOrThrow(heldIds.reduce((pp, key) => pp.hget(key, 'data'), pipeline(redis)))) as Array<string | null>;
    let j = 0;
    per.forEach(([, active], i) => {
      for (let a = 0; a < active.length; a++, j++) {
        try {
          held[i]! += (JSON.parse(data[j] ?? '{}') as { d?: unknown[] }).d?.length ?? 0;
        } catch {
          // a job being rewritten; counted on the next look
        }
      }
    });
  }
  const n = (f: string): number => Number(stats[f] ?? 0);
  const depth = (i: number): { waiting: number; active: number; delayed: number } => {
    // Read a moment apart: clamp so that a file moving meanwhile never makes a count negative.
    const queued = per[i]![0];
    const active = Math.min(held[i]!, queued);
    const late = Math.min(per[i]![2], queued - active);
    return { waiting: queued - active - late, active, delayed: late };
  };
  const sorted = spans.map(Number).sort((a, b) => a - b);
  const sinkDepth = depth(names.length - 1);
  return {
    app: app.name,
    tasks: app.dagTasks.map((t, i) => ({
      task: t,
      ...depth(i),
      processed: n(`processed:${t}`),
      failed: n(`failed:${t}`),
      retried: n(`retried:${t}`),
      duplicates: n(`dup:${t}`),
    })),
    sink: { waiting: sinkDepth.waiting, active: sinkDepth.active, delivered: n('delivered'), duplicatesSuppressed: n('dupSuppressed'), failed: n(`failed:${SINK_QUEUE}`) },
    items: { submitted: n('items:submitted'), done: n('items:done'), inFlight: Math.max(0, n('items:submitted') - n('items:done')) },
    makespan: {
      count: sorted.length,
      p50Ms: percentile(sorted, 50),
      p95Ms: percentile(sorted, 95),
      meanMs: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : undefined,
    },
    deadLetters: letters.map((l) => JSON.parse(l) as DeadLetter),
    deadLetterCount: nLetters,
  };
}
