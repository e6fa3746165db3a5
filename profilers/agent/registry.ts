// Agent registration and liveness. An agent's `node:<name>` hash carries its probe address and
// expires after HEARTBEAT_TTL_FACTOR (2.5) heartbeat periods, so a killed agent disappears from every
// reader within that time (3 s period -> gone within 7.5 s, one missed beat tolerated) without
// anyone cleaning up.
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';

export const DEFAULT_HEARTBEAT_MS = 3000;
export const HEARTBEAT_TTL_FACTOR = 2.5;

export interface AgentRegistration {
  node: string;
  host: string;
  port: number;
  pid: number;
  /** ms since epoch */
  startedAt: number;
  /** ms since epoch of the last heartbeat */
  heartbeatAt: number;
  /** Heartbeat period in ms. */
  periodMs: number;
  /** Host name of the machine (informational). */
  hostname: string;
}

/** How long a heartbeat key lives after a beat: HEARTBEAT_TTL_FACTOR periods. */
export const heartbeatLifetimeMs = (periodMs: number): number => Math.max(1, Math.round(periodMs * HEARTBEAT_TTL_FACTOR));

export async function heartbeat(redis: Redis, keys: Keys, reg: AgentRegistration): Promise<void> {
  const key = keys.node(reg.node);
  const fields: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...reg, heartbeatAt: Date.now() })) fields[k] = String(v);
  await redis
    .multi()
    .hset(key, fields)
    .pexpire(key, heartbeatLifetimeMs(reg.periodMs))
    .sadd(keys.nodes(), reg.node)
    .exec();
}

export async function deregister(redis: Redis, keys: Keys, node: string): Promise<void> {
  await redis.del(keys.node(node));
}

function parse(node: string, h: Record<string, string>): AgentRegistration | undefined {
  if (!h.host || !h.port) return undefined;
  return {
    node,
    host: h.host,
    port: Number(h.port),
    pid: Number(h.pid ?? 0),
    startedAt: Number(h.startedAt ?? 0),
    heartbeatAt: Number(h.heartbeatAt ?? 0),
    periodMs: Number(h.periodMs ?? DEFAULT_HEARTBEAT_MS),
    hostname: h.hostname ?? '',
  };
}

/** Every agent whose heartbeat key has not expired, sorted by node name. */
export async function liveAgents(redis: Redis, keys: Keys): Promise<AgentRegistration[]> {
  const names = (await redis.smembers(keys.nodes())).sort();
  if (names.length === 0) return [];
  const pipe = redis.pipeline();
  for (const n of names) pipe.hgetall(keys.node(n));
  const res = (await pipe.exec()) ?? [];
  const out: AgentRegistration[] = [];
  names.forEach((n, i) => {
    const [err, h] = res[i] ?? [];
    if (!err && h) {
      const reg = parse(n, h as Record<string, string>);
      if (reg) out.push(reg);
    }
  });
  return out;
}

/**
 * When each live agent last beat and when its heartbeat expires unless it beats again, on the
 * caller's clock, from the keys' remaining lifetimes in Redis (so the agents' own clocks, which
 * may be set apart, play no part).
 */
export async function heartbeatTimes(redis: Redis, keys: Keys): Promise<Map<string, { at: number; expires: number }>> {
  const names = (await redis.smembers(keys.nodes())).sort();
  const out = new Map<string, { at: number; expires: number }>();
  if (names.length === 0) return out;
  const pipe = redis.pipeline();
  for (const n of names) pipe.hget(keys.node(n), 'periodMs').pttl(keys.node(n));
  const res = (await pipe.exec()) ?? [];
  const now = Date.now();
  names.forEach((n, i) => {
    const [e1, period] = res[2 * i] ?? [];
    const [e2, pttl] = res[2 * i + 1] ?? [];
    if (e1 || e2 || typeof pttl !== 'number' || pttl === -2 || pttl === 0) return;
    // A key without a lifetime (-1: written by hand, not by an agent) lives for good.
    if (pttl === -1) return void out.set(n, { at: now, expires: Infinity });
    const lifetime = heartbeatLifetimeMs(Number(period ?? DEFAULT_HEARTBEAT_MS));
    out.set(n, { at: now + pttl - lifetime, expires: now + pttl });
  });
  return out;
}
