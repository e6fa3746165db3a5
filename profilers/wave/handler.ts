// Inbox handler `wave-assign`: this node now holds a task of a distributed WAVE run. It places
// the children that task controls, choosing from its own local view only: its own outgoing link
// fits and the resource figures of the participating nodes, read from Redis when the run first
// reaches this node. Placements are written to the run's mapping hash, announced to the home
// and sent as `wave-assign` to the chosen agent.
// Order: a node handles the tasks it holds in hand-out order, and a task only once every task
// before it that controls children has been placed. Greedy choices change the chooser's view
// (the reuse penalty), so this is what makes the result equal to mappers/ simulation.
import { existsSync } from 'node:fs';
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import type { ExecProfile, LinkProfile, NodeResources, ProfileSnapshot } from '../../config/types.js';
import { loadApp } from '../../config/app/load.js';
import { problemFromProfiles } from '../../mappers/from-profiles.js';
import { candidatesOf, chooseNodeGreedy, chooseNodeRandom, controlRelation, viewOf, type ControlRelation, type GreedyView } from '../../mappers/wave.js';
import { rngFor } from '../../mappers/prng.js';
import type { Problem } from '../../mappers/problem.js';
import type { MessageHandler } from '../agent/agent.js';
import { reply, sendToAgent } from '../agent/inbox.js';
import { waveKeys, waveOrder, type WavePlacement, type WaveRunSpec } from './protocol.js';

interface RunState {
  spec: WaveRunSpec;
  problem: Problem;
  rel: ControlRelation;
  rank: Map<string, number>;
  view: GreedyView;
  processed: Set<string>;
  chain: Promise<void>;
}

const runs = new Map<string, Promise<RunState>>();

function parse<T>(raw: string | null | undefined): T | undefined {
  try {
    return raw ? (JSON.parse(raw) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** This node's local view: its own outgoing links, the participants' resources, the app's execution profiles. */
async function localSnapshot(redis: Redis, keys: Keys, self: string, spec: WaveRunSpec): Promise<ProfileSnapshot> {
  const peers = spec.nodes.filter((n) => n !== self);
  const links = peers.length ? (await redis.mget(peers.map((p) => keys.linkFit(self, p)))).map((r) => parse<LinkProfile>(r)).filter((l): l is LinkProfile => Boolean(l)) : [];
  const resRaw = (await redis.pipeline(spec.nodes.map((n) => ['hget', keys.resources(n), 'json'])).exec()) ?? [];
  const nodes = resRaw.map(([, r]) => parse<NodeResources>(r as string | null)).filter((r): r is NodeResources => Boolean(r));
  const execKeys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', `${keys.exec(spec.app, '*', '*').replace(/[?[\]\\]/g, '\\$&')}`, 'COUNT', 500);
    cursor = next;
    execKeys.push(...found);
  } while (cursor !== '0');
  const exec = execKeys.length ? (await redis.mget(execKeys.sort())).map((r) => parse<ExecProfile>(r)).filter((e): e is ExecProfile => Boolean(e)) : [];
  return { nodes, links, exec, takenAt: Date.now() };
}

async function loadRun(redis: Redis, keys: Keys, self: string, app: string, run: string): Promise<RunState> {
  const spec = parse<WaveRunSpec>(await redis.get(waveKeys(keys, app, run).spec));
  if (!spec) throw new Error(`WAVE run ${run} of ${app} is unknown or expired`);
  const appSpec = await loadApp(existsSync(spec.appDir) ? spec.appDir : spec.app);
  const problem = problemFromProfiles(appSpec, await localSnapshot(redis, keys, self, spec), { nodes: spec.nodes });
  const rel = controlRelation(problem);
  return { spec, problem, rel, rank: waveOrder(rel), view: viewOf(problem, self), processed: new Set(), chain: Promise.resolve() };
}

function edgeBytes(problem: Problem, from: string, to: string): number {
  return problem.edges.find((e) => e.from === from && e.to === to)?.bytes ?? 0;
}

async function placeHeld(redis: Redis, keys: Keys, self: string, st: RunState, log: (l: string) => void): Promise<void> {
  const { spec, rel, rank, problem } = st;
  const wk = waveKeys(keys, spec.app, spec.run);
  const deadline = spec.createdAt + spec.timeoutMs;
  const controlling = [...rank.keys()].filter((t) => (rel.controls[t] ?? []).length > 0);
  while (Date.now() < deadline) {
    const mapping = await redis.hgetall(wk.mapping);
    const mine = controlling.filter((t) => mapping[t] === self && !st.processed.has(t));
    if (mine.length === 0) return;
    const t = mine.reduce((a, b) => (rank.get(a)! <= rank.get(b)! ? a : b));
    const earlierUnplaced = controlling.some((u) => rank.get(u)! < rank.get(t)! && mapping[u] === undefined);
    if (earlierUnplaced) {
      await new Promise((r) => setTimeout(r, 10));
      continue;
    }
    for (const child of rel.controls[t] ?? []) {
      if (mapping[child] !== undefined) continue;
      const cands = candidatesOf(problem, child);
      let node: string;
      if (spec.mapper === 'wave-random') {
        node = chooseNodeRandom(rngFor(spec.seed, child), cands);
      } else {
        const r = chooseNodeGreedy(st.view, edgeBytes(problem, t, child), cands);
        st.view = r.view;
        node = r.node;
      }
      await redis.multi().hsetnx(wk.mapping, child, node).expire(wk.mapping, 600).exec();
      mapping[child] = node;
      const placement: WavePlacement = { task: child, node, by: self };
      await sendToAgent(redis, keys, node, { type: 'wave-assign', id: spec.run, app: spec.app, task: child });
      await reply(redis, keys, spec.run, placement);
      log(`WAVE ${spec.app}: ${t}@${self} placed ${child} on ${node}`);
    }
    st.processed.add(t);
  }
  throw new Error(`WAVE run ${spec.run}: timed out waiting for earlier tasks to be placed`);
}

export const handleWaveAssign: MessageHandler = async (msg, ctx) => {
  const run = msg.id;
  const app = String(msg.app);
  let pending = runs.get(run);
  if (!pending) {
    pending = loadRun(ctx.redis, ctx.keys, ctx.node, app, run);
    runs.set(run, pending);
    pending.catch(() => runs.delete(run));
    setTimeout(() => runs.delete(run), 10 * 60_000).unref();
  }
  const st = await pending;
  // One placement loop at a time per run and node; a new assignment queues another pass.
  st.chain = st.chain.then(() => placeHeld(ctx.redis, ctx.keys, ctx.node, st, ctx.log)).catch((e: unknown) => {
    ctx.log(`WAVE run ${run}: ${(e as Error).message}`);
  });
  await st.chain;
};
