// Reading the profiles the node agents publish into one ProfileSnapshot, for `jupiter profile`
// and the mapping pipeline. Only live agents count: a node whose heartbeat key expired is left
// out together with every link that starts or ends at it and its execution profiles.
import { scanKeys } from '../../circe/queue/connection.js';
import type { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import type { ExecProfile, LinkProfile, NodeOverhead, NodeResources, ProfileSnapshot } from '../../config/types.js';
import { HOME } from '../../config/types.js';
import { liveAgents, type AgentRegistration } from '../../profilers/agent/registry.js';
import { readNetworkHealth, type NetworkHealth } from './faults.js';

export interface ReadProfilesOptions {
  prefix?: string;
}

export interface ProfileView {
  agents: AgentRegistration[];
  snapshot: ProfileSnapshot;
  /** Recent packet loss per link and the faults localised from it. */
  health: NetworkHealth;
}

export function parseJson<T>(raw: string | null | undefined): T | undefined {
  if (!raw) return undefined;
  try {
    return JSON.parse(raw) as T;
  } catch {
    return undefined;
  }
}

async function scanSorted(redis: Redis, pattern: string): Promise<string[]> {
  return (await scanKeys(redis, pattern)).sort();
}

/** Live agents plus the snapshot of their profiles. */
export async function readProfileView(redis: Redis, opts: ReadProfilesOptions = {}): Promise<ProfileView> {
  const keys = redisKeys(opts.prefix);
  const agents = await liveAgents(redis, keys);
  const names = agents.map((a) => a.node);
  const live = new Set(names);
  const nodes: NodeResources[] = [];
  const links: LinkProfile[] = [];
  const overheads: NodeOverhead[] = [];
  if (names.length > 0) {
    const res = await redis.pipeline(names.map((n) => ['hget', keys.resources(n), 'json'])).exec();
    (res ?? []).forEach(([, raw]) => {
      const r = parseJson<NodeResources>(raw as string | null);
      if (r) nodes.push(r);
    });
    const pairs = names.flatMap((f) => names.filter((t) => t !== f).map((t) => [f, t] as const));
    if (pairs.length > 0) {
      const fits = await redis.mget(pairs.map(([f, t]) => keys.linkFit(f, t)));
      for (const raw of fits) {
        const l = parseJson<LinkProfile>(raw);
        if (l) links.push(l);
      }
    }
  }
  const homeLinks: LinkProfile[] = [];
  if (names.length > 0) {
    for (const raw of await redis.mget(names.map((n) => keys.overhead(n)))) {
      const o = parseJson<NodeOverhead>(raw);
      if (o) overheads.push(o);
    }
    // Each live node's two links with the home (profilers/overhead).
    for (const raw of await redis.mget(names.flatMap((n) => [keys.linkFit(n, HOME), keys.linkFit(HOME, n)]))) {
      const l = parseJson<LinkProfile>(raw);
      if (l) homeLinks.push(l);
    }
  }
  const exec: ExecProfile[] = [];
  const execKeys = await scanSorted(redis, `${escapeGlob(keys.prefix)}exec:*`);
  if (execKeys.length > 0) {
    for (const raw of await redis.mget(execKeys)) {
      const e = parseJson<ExecProfile>(raw);
      if (e && live.has(e.node)) exec.push(e);
    }
  }
  const health = await readNetworkHealth(redis, keys, names);
  return { agents, snapshot: { nodes, links, exec, ...(overheads.length ? { overheads } : {}), ...(homeLinks.length ? { homeLinks } : {}), takenAt: Date.now() }, health };
}

/** The ProfileSnapshot of live nodes only. */
export async function readProfiles(redis: Redis, opts: ReadProfilesOptions = {}): Promise<ProfileSnapshot> {
  return (await readProfileView(redis, opts)).snapshot;
}

/** True when every ordered pair of the given (or all live) nodes has a fit and every node has resources. */
export function isComplete(snapshot: ProfileSnapshot, nodes?: string[]): boolean {
  const names = nodes ?? snapshot.nodes.map((n) => n.node);
  const haveRes = new Set(snapshot.nodes.map((n) => n.node));
  const haveLink = new Set(snapshot.links.map((l) => `${l.from}\u0000${l.to}`));
  return names.every((f) => haveRes.has(f) && names.every((t) => t === f || haveLink.has(`${f}\u0000${t}`)));
}

function escapeGlob(s: string): string {
  return s.replace(/[*?[\]\\]/g, '\\$&');
}
