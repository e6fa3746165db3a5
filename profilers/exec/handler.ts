// Inbox handler `exec-profile`: profile an app on this node and store one ExecProfile per task
// in Redis (`exec:<app>:<node>:<task>`), then reply with what was profiled, skipped or failed.
// The profiles already stored are handed to the profiler, which reuses those still valid.
// After each task it also posts a progress note on the reply list (ExecProfileProgress), so the
// requester can show how far each node is and wait as long as they advance.
import { existsSync } from 'node:fs';
import type { AppSpec, ExecProfile } from '../../config/types.js';
import { loadApp } from '../../config/app/load.js';
import type { MessageHandler } from '../agent/agent.js';
import { reply } from '../agent/inbox.js';
import { profileApp, type AppProfileResult } from './profile-app.js';
import { machineTurn } from '../agent/machine-turn.js';
import { machineId } from '../../circe/runtime/machine.js';

export interface ExecProfileRequest {
  type: 'exec-profile';
  id: string;
  /** App name (looked up under apps/ when appDir is not on this machine). */
  app: string;
  appDir: string;
  /** Measure every task again, whatever this node measured before. */
  fresh?: boolean;
}

/** A progress note on the reply list (the final reply is an ExecProfileReply, with `ok`). */
export interface ExecProfileProgress {
  node: string;
  progress: { done: number; total: number };
}

export interface ExecProfileReply extends Partial<AppProfileResult> {
  node: string;
  ok: boolean;
  error?: string;
}

export const handleExecProfile: MessageHandler = async (raw, ctx) => {
  const msg = raw as unknown as ExecProfileRequest;
  let body: ExecProfileReply;
  try {
    const here = existsSync(msg.appDir);
    const app: AppSpec = await loadApp(here ? msg.appDir : msg.app).catch((e: unknown) => {
      if (here) throw e;
      // Typically an agent in a container: it has the apps of its image (the deploying checkout's apps/).
      throw new Error(`app ${msg.app} is not on this node (no folder ${msg.appDir} here, and ${(e as Error).message}); an agent in a container profiles only the apps of its image (the checkout's apps/)`);
    });
    ctx.log(`execution profiling of ${app.name} requested`);
    // This node's earlier profiles: unchanged tasks are not run again (inputsHash).
    const dag = app.tasks.filter((t) => t.isDag).map((t) => t.name);
    const earlier = dag.length > 0 && !msg.fresh ? await ctx.redis.mget(dag.map((t) => ctx.keys.exec(app.name, ctx.node, t))) : [];
    const reuse = new Map<string, ExecProfile>();
    earlier.forEach((raw, i) => {
      try {
        if (raw) reuse.set(dag[i]!, JSON.parse(raw) as ExecProfile);
      } catch {
        // an unreadable profile is measured again
      }
    });
    const result = await profileApp(app, ctx.node, {
      reuse,
      // The other nodes of this machine were asked at the same moment: time in turns.
      turn: machineTurn(ctx.redis, ctx.keys.machineTiming(machineId()), `${ctx.node}:${msg.id}`),
      log: ctx.log,
      onTask: (done, total) => {
        const note: ExecProfileProgress = { node: ctx.node, progress: { done, total } };
        void reply(ctx.redis, ctx.keys, msg.id, note).catch(() => undefined);
      },
    });
    if (result.reused.length > 0) ctx.log(`execution profiling of ${app.name}: ${result.reused.length} unchanged task(s) not run again`);
    if (result.profiles.length > 0) {
      await ctx.redis.mset(Object.fromEntries(result.profiles.map((p) => [ctx.keys.exec(p.app, p.node, p.task), JSON.stringify(p)])));
    }
    // Forget earlier profiles of tasks that were not profiled this time, so tables never mix runs.
    const stale = [...result.skipped, ...result.failed].map((s) => ctx.keys.exec(app.name, ctx.node, s.task));
    if (stale.length > 0) await ctx.redis.del(...stale);
    body = { ...result, ok: result.failed.length === 0 };
  } catch (e) {
    body = { node: ctx.node, ok: false, error: (e as Error).message };
  }
  await reply(ctx.redis, ctx.keys, msg.id, body);
};
