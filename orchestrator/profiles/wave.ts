// The home's side of distributed WAVE (`jupiter map <app> --mapper wave-greedy|wave-random`
// while agents run): publish the run, place the entry tasks (input_node.txt, else the mapper's
// rule from the home's view: no links, everyone's resources), hand them to their agents, and
// collect the placements the agents make until every task has a node.
import type { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { redisKeys } from '../../config/redis-keys.js';
import { runtimeError } from '../../config/errors.js';
import { HOME, type AppSpec, type ClusterConfig, type Mapping } from '../../config/types.js';
import { simulate, type MapResult, type Problem } from '../../mappers/index.js';
import { candidatesOf, chooseNodeGreedy, chooseNodeRandom, controlRelation, viewOf, type GreedyView } from '../../mappers/wave.js';
import { rngFor } from '../../mappers/prng.js';
import { liveAgents } from '../../profilers/agent/registry.js';
import { collectReplies, sendToAgent } from '../../profilers/agent/inbox.js';
import { WAVE_MAPPERS, WAVE_TTL_SEC, waveKeys, type WaveMapper, type WavePlacement, type WaveRunSpec } from '../../profilers/wave/protocol.js';
import { stackEndpoints } from '../stack/endpoints.js';
import { openRedis } from '../connect.js';

export interface DistributedWaveResult {
  mapping: Mapping;
  placements: WavePlacement[];
  run: string;
}

export async function runDistributedWave(
  redis: Redis,
  app: AppSpec,
  problem: Problem,
  opts: { mapper: WaveMapper; seed: number; prefix?: string; timeoutMs?: number },
): Promise<DistributedWaveResult> {
  const keys = redisKeys(opts.prefix);
  const run = randomUUID();
  const wk = waveKeys(keys, app.name, run);
  const nodes = problem.nodes.map((n) => n.name);
  const spec: WaveRunSpec = { run, app: app.name, appDir: app.dir, mapper: opts.mapper, seed: opts.seed, nodes, createdAt: Date.now(), timeoutMs: opts.timeoutMs ?? 30_000 };
  await redis.set(wk.spec, JSON.stringify(spec), 'EX', WAVE_TTL_SEC);
  const rel = controlRelation(problem);
  const placements: WavePlacement[] = [];
  let view: GreedyView = { ...viewOf(problem, HOME), links: {} };
  for (const task of rel.controls[HOME] ?? []) {
    const cands = candidatesOf(problem, task);
    let node: string;
    const pinned = problem.entryNodes?.[task];
    if (opts.mapper === 'wave-random') node = chooseNodeRandom(rngFor(opts.seed, task), cands);
    else if (pinned && cands.includes(pinned)) node = pinned;
    else {
      const r = chooseNodeGreedy(view, 0, cands);
      view = r.view;
      node = r.node;
    }
    await redis.multi().hset(wk.mapping, task, node).expire(wk.mapping, WAVE_TTL_SEC).exec();
    placements.push({ task, node, by: HOME });
  }
  for (const p of [...placements]) await sendToAgent(redis, keys, p.node, { type: 'wave-assign', id: run, app: app.name, task: p.task });
  const missing = problem.tasks.length - placements.length;
  placements.push(...(await collectReplies<WavePlacement>(redis, keys, run, { count: missing, timeoutMs: spec.timeoutMs })));
  const mapping = await redis.hgetall(wk.mapping);
  const unplaced = problem.tasks.filter((t) => mapping[t] === undefined);
  if (unplaced.length > 0) {
    throw runtimeError(`distributed ${opts.mapper} did not place ${unplaced.join(', ')} within ${spec.timeoutMs / 1000} s`, {
      hint: 'an agent may have died during the run; check `jupiter profile` and the agents\' logs',
    });
  }
  return { mapping, placements, run };
}

/**
 * For `jupiter map`: when the mapper is a WAVE variant and every node of the problem has a live
 * agent, run WAVE distributed on the agents and return its schedule; otherwise undefined (the
 * pure simulation in mappers/ is used).
 */
export async function distributedWaveIfLive(
  app: AppSpec,
  cluster: ClusterConfig,
  problem: Problem,
  mapper: string,
  seed: number,
  say: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): Promise<MapResult | undefined> {
  if (!(WAVE_MAPPERS as readonly string[]).includes(mapper)) return undefined;
  const url = cluster.redisUrl ?? stackEndpoints(cluster)?.redisUrl;
  if (!url) return undefined;
  const redis = await openRedis(url, 'jupiter:map');
  try {
    const live = new Set((await liveAgents(redis, redisKeys(cluster.redisPrefix))).map((a) => a.node));
    const absent = problem.nodes.map((n) => n.name).filter((n) => !live.has(n));
    if (absent.length > 0) {
      say(`map: no live agent on ${absent.join(', ')}: ${mapper} runs as a simulation`);
      return undefined;
    }
    const t0 = Date.now();
    const res = await runDistributedWave(redis, app, problem, { mapper: mapper as WaveMapper, seed, prefix: cluster.redisPrefix });
    say(`map: ${mapper} ran distributed on ${live.size} agent(s) in ${Date.now() - t0} ms (${res.placements.filter((p) => p.by !== HOME).length} placement(s) by agents)`);
    return { ...simulate(problem, res.mapping, { policy: 'non-delay' }), mapper, origin: 'distributed on the node agents' };
  } finally {
    redis.disconnect();
  }
}
