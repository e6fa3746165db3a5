// Live profiles for the mapping pipeline (`jupiter map <app>` without --profiles): whatever the
// running agents have published, waiting briefly for agents that are still bootstrapping.
// undefined (with a message on stderr) when there is no Redis or no live agent.
import type { ClusterConfig, ProfileSnapshot } from '../../config/types.js';
import { stackEndpoints } from '../stack/endpoints.js';
import { openRedis } from '../connect.js';
import { isComplete, readProfileView } from './read.js';

export interface LiveProfileOptions {
  /** How long to wait for a complete link matrix when agents are still bootstrapping. */
  waitMs?: number;
  /** Where to print what was used (default stderr). */
  say?: (line: string) => void;
  /** Only these apps' execution profiles are worth a hint. */
  app?: string;
}

export async function liveProfiles(cluster: ClusterConfig, opts: LiveProfileOptions = {}): Promise<ProfileSnapshot | undefined> {
  const say = opts.say ?? ((l: string) => process.stderr.write(`${l}\n`));
  const url = cluster.redisUrl ?? stackEndpoints(cluster)?.redisUrl;
  if (!url) {
    say('no Redis configured and the embedded stack is not running: no live profiles');
    return undefined;
  }
  let redis;
  try {
    redis = await openRedis(url, 'jupiter:map');
  } catch (e) {
    say(`${(e as Error).message}: no live profiles`);
    return undefined;
  }
  try {
    const deadline = Date.now() + (opts.waitMs ?? 10_000);
    let view = await readProfileView(redis, { prefix: cluster.redisPrefix });
    while (view.agents.length > 0 && !isComplete(view.snapshot, view.agents.map((a) => a.node)) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      view = await readProfileView(redis, { prefix: cluster.redisPrefix });
    }
    if (view.agents.length === 0) {
      say('no live agents (start them with `jupiter agent --node <name>`): no live profiles');
      return undefined;
    }
    const n = view.agents.length;
    const s = view.snapshot;
    const execNote = opts.app && !s.exec.some((e) => e.app === opts.app)
      ? `; no execution profile of ${opts.app} yet (run \`jupiter profile exec ${opts.app}\`)`
      : '';
    say(`live profiles of ${n} agent(s) (${view.agents.map((a) => a.node).join(', ')}): ${s.links.length}/${n * (n - 1)} links fitted${execNote}`);
    return s;
  } finally {
    redis.disconnect();
  }
}
