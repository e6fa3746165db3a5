// `jupiter profile exec <app>`: ask every live agent to profile the app's tasks, wait for the
// replies, and show one table of duration / output volume per task and node.
import { table as newTable } from '../report/table.js';
import type { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import type { AppSpec } from '../../config/types.js';
import { liveAgents } from '../../profilers/agent/registry.js';
import { newRequestId, readReplies, sendToAgent } from '../../profilers/agent/inbox.js';
import type { ExecProfileProgress, ExecProfileReply, ExecProfileRequest } from '../../profilers/exec/handler.js';
import { fmtBytes } from './format.js';

export interface ExecRequestOptions {
  prefix?: string;
  /**
   * Longest silence of a node still working: a node that neither finished a task nor replied for
   * this long counts as missing. A node that keeps finishing tasks is waited for, however many
   * tasks the app has.
   */
  timeoutMs: number;
  /** Profile one node at a time (nodes sharing a machine do not disturb each other's timings). */
  serial?: boolean;
  /** Run every task again (default: a node keeps the profiles of tasks unchanged since, by content). */
  fresh?: boolean;
  /** Only these nodes (default: every live agent). */
  nodes?: string[];
  onReply?: (r: ExecProfileReply) => void;
  /** A node finished another task (done of total). */
  onProgress?: (node: string, done: number, total: number) => void;
}

export interface ExecRequestResult {
  asked: string[];
  replies: ExecProfileReply[];
  /** Agents that did not answer in time. */
  missing: string[];
}

export async function requestExecProfiles(redis: Redis, app: AppSpec, opts: ExecRequestOptions): Promise<ExecRequestResult> {
  const keys = redisKeys(opts.prefix);
  let asked = (await liveAgents(redis, keys)).map((a) => a.node);
  if (opts.nodes) asked = asked.filter((n) => opts.nodes!.includes(n));
  const replies: ExecProfileReply[] = [];
  const batches = opts.serial ? asked.map((n) => [n]) : [asked];
  for (const batch of batches) {
    if (batch.length === 0) continue;
    const id = newRequestId();
    for (const node of batch) {
      const msg: ExecProfileRequest = { type: 'exec-profile', id, app: app.name, appDir: app.dir, ...(opts.fresh ? { fresh: true } : {}) };
      await sendToAgent(redis, keys, node, { ...msg });
    }
    // Each node has until `timeoutMs` after its last news (the request, a finished task); a node
    // silent past its time is given up, the others keep theirs.
    const news = new Map(batch.map((n) => [n, Date.now()]));
    await readReplies(redis, keys, id, (raw) => {
      const msg = raw as ExecProfileReply | ExecProfileProgress;
      if (!news.has(msg.node)) return false;
      if ('progress' in msg) {
        news.set(msg.node, Date.now());
        opts.onProgress?.(msg.node, msg.progress.done, msg.progress.total);
        return false;
      }
      news.delete(msg.node);
      replies.push(msg);
      opts.onReply?.(msg);
      return news.size === 0;
    }, () => {
      for (const [n, t] of news) if (Date.now() - t > opts.timeoutMs) news.delete(n);
      return news.size > 0 ? Math.max(...news.values()) + opts.timeoutMs : 0;
    });
  }
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
