// `jupiter profile exec <app>` and deploy's execution profiling: ask every live agent to profile
// the app's tasks, wait for the replies, and show one table of duration / output volume per task
// and node. Nodes on one machine (their resource profile's `host`) profile at most as many at once
// as it has cores, so that no timed call shares a core with another node's (seven testbed hosts on
// two cores profiled at once came out 3-6x slower than the tasks then ran); machines work in parallel.
import { table as newTable } from '../report/table.js';
import type { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import type { Keys } from '../../config/redis-keys.js';
import type { AppSpec, NodeResources } from '../../config/types.js';
import { liveAgents } from '../../profilers/agent/registry.js';
import { newRequestId, readReplies, sendToAgent } from '../../profilers/agent/inbox.js';
import type { ExecProfileProgress, ExecProfileReply, ExecProfileRequest } from '../../profilers/exec/handler.js';
import { fmtBytes } from './format.js';
import { pipeline } from '../../circe/queue/pipeline.js';

export interface ExecRequestOptions {
  prefix?: string;
  /**
   * Longest silence of a node still working: a node that neither finished a task nor replied for
   * this long counts as missing. A node that keeps finishing tasks is waited for, however many
   * tasks the app has.
   */
  timeoutMs: number;
  /** Profile one node at a time, machines too (default: as many of a machine's nodes at once as it has cores, machines in parallel). */
  serial?: boolean;
  /** Run every task again (default: a node keeps the profiles of tasks unchanged since, by content). */
  fresh?: boolean;
  /** Only these nodes (default: every live agent). */
  nodes?: string[];
  onReply?: (r: ExecProfileReply) => void;
  /** A node finished another task (done of total). */
  onProgress?: (node: string, done: number, total: number) => void;
  /** The order of asking, before the first: a machine's nodes over as many queues as it has cores (see machineQueues). */
  onPlan?: (queues: string[][]) => void;
  /** A node was asked (the others of its machine wait their turn). */
  onAsk?: (node: string) => void;
}

export interface ExecRequestResult {
  asked: string[];
  replies: ExecProfileReply[];
  /** Agents that did not answer in time. */
  missing: string[];
}

/**
 * The order nodes profile in: a machine's nodes split round-robin (in the order given) over as
 * many queues as it has cores, each queue's nodes one after the other; all queues run in
 * parallel. So no two timed calls share a core (each node times one task at a time), and a
 * machine's nodes still use all of its cores: the embedded default's three local nodes on 2 cores
 * take two turns, not three. A node whose machine is unknown has a queue of its own.
 */
export function machineQueues(nodes: string[], machineOf: (node: string) => { host?: string; cores?: number } | undefined): string[][] {
  const machines = new Map<string, { cores: number; nodes: string[] }>();
  for (const n of nodes) {
    const m = machineOf(n);
    const key = m?.host === undefined || m.host === '' ? `node\u0000${n}` : `machine\u0000${m.host}`;
    const cores = Math.max(1, Math.floor(m?.cores ?? 1));
    const e = machines.get(key) ?? { cores, nodes: [] };
    e.cores = Math.min(e.cores, cores);
    e.nodes.push(n);
    machines.set(key, e);
  }
  const out: string[][] = [];
  for (const { cores, nodes: list } of machines.values()) {
    const queues: string[][] = Array.from({ length: Math.min(cores, list.length) }, () => []);
    list.forEach((n, i) => queues[i % queues.length]!.push(n));
    out.push(...queues);
  }
  return out;
}

/** Each node's machine and its cores as its resource profile names them (undefined: no profile yet). */
async function machinesOf(redis: Redis, keys: Keys, nodes: string[]): Promise<Map<string, { host?: string; cores?: number } | undefined>> {
  const pipe = pipeline(redis);
  for (const n of nodes) pipe.hget(keys.resources(n), 'json');
  const res = (await pipe.exec()) ?? [];
  return new Map(nodes.map((n, i) => {
    try {
      const raw = res[i]?.[1] as string | null | undefined;
      if (!raw) return [n, undefined];
      const r = JSON.parse(raw) as Partial<NodeResources>;
      return [n, { host: r.host, cores: r.cores }];
    } catch {
      return [n, undefined];
    }
  }));
}

export async function requestExecProfiles(redis: Redis, app: AppSpec, opts: ExecRequestOptions): Promise<ExecRequestResult> {
  const keys = redisKeys(opts.prefix);
  let asked = (await liveAgents(redis, keys)).map((a) => a.node);
  if (opts.nodes) asked = asked.filter((n) => opts.nodes!.includes(n));
  const replies: ExecProfileReply[] = [];
  const machines = opts.serial ? undefined : await machinesOf(redis, keys, asked);
  const queues = machines ? machineQueues(asked, (n) => machines.get(n)) : [asked];
  opts.onPlan?.(queues);
  const one = async (node: string): Promise<void> => {
    const id = newRequestId();
    const msg: ExecProfileRequest = { type: 'exec-profile', id, app: app.name, appDir: app.dir, ...(opts.fresh ? { fresh: true } : {}) };
    await sendToAgent(redis, keys, node, { ...msg });
    opts.onAsk?.(node);
    // The node has until `timeoutMs` after its last news (the request, a finished task); silent
    // past that, it is given up and the next node of its queue is asked.
    let news = Date.now();
    let answered = false;
    await readReplies(redis, keys, id, (raw) => {
      const m = raw as ExecProfileReply | ExecProfileProgress;
      if (m.node !== node) return false;
      if ('progress' in m) {
        news = Date.now();
        opts.onProgress?.(node, m.progress.done, m.progress.total);
        return false;
      }
      answered = true;
      replies.push(m);
      opts.onReply?.(m);
      return true;
    }, () => (answered ? 0 : news + opts.timeoutMs));
  };
  await Promise.all(queues.map(async (q) => {
    for (const node of q) await one(node);
  }));
  const answered = new Set(replies.map((r) => r.node));
  return { asked, replies, missing: asked.filter((n) => !answered.has(n)) };
}

export function formatExecResult(app: AppSpec, res: ExecRequestResult): string {
  const nodes = res.replies.map((r) => r.node).sort();
  const t = newTable(['task', ...nodes.map((n) => `${n}: time / output`)]);
  for (const task of app.dagTasks) {
    t.push([task, ...nodes.map((n) => {
      const r = res.replies.find((x) => x.node === n)!;
      const p = r.profiles?.find((x) => x.task === task);
      if (p) return `${(p.durationSec * 1000).toFixed(1)} ms / ${fmtBytes(p.outputBytes)}`;
      if (r.skipped?.some((x) => x.task === task)) return 'skipped';
      if (r.failed?.some((x) => x.task === task)) return 'FAILED';
      return '-';
    })]);
  }
  const lines = [`Execution profile of ${app.name}`, t.toString()];
  const notes = new Map<string, string>();
  for (const r of res.replies) {
    for (const s of r.skipped ?? []) notes.set(`${s.task} skipped: ${s.reason}`, '');
    for (const f of r.failed ?? []) notes.set(`${f.task} failed on ${r.node}: ${f.reason}`, '');
    if (r.error) notes.set(`${r.node}: ${r.error}`, '');
  }
  for (const m of res.missing) notes.set(`${m}: no answer before the timeout`, '');
  lines.push(...[...notes.keys()].map((n) => `  ${n}`));
  return `${lines.join('\n')}\n`;
}
