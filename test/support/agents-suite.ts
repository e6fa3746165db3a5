// The hooks of the real-agent suites: one redis-server and client for the suite, the agents'
// environment pointing at it, and every agent the suite spawned killed afterwards.
import { Redis } from 'ioredis';
import type { AgentProc } from '../profilers/agent-procs.js';
import { startTestRedis, type TestRedis } from './redis.js';

export interface AgentsSuite {
  redis: TestRedis;
  client: Redis;
  /** JUPITER_REDIS_URL of the suite's Redis, plus the extra variables given. */
  env: NodeJS.ProcessEnv;
  /** Agents to SIGKILL after the suite. */
  agents: AgentProc[];
}

/** Register before/after; the returned object's fields are set in before() (register your own before() after this). */
export function agentsSuite(extraEnv: NodeJS.ProcessEnv = {}): AgentsSuite {
  const s = { agents: [] as AgentProc[] } as AgentsSuite;
  before(async () => {
    s.redis = await startTestRedis();
    s.client = new Redis(s.redis.url);
    s.env = { JUPITER_REDIS_URL: s.redis.url, ...extraEnv };
  });
  after(async () => {
    await Promise.all(s.agents.map((a) => a.stop('SIGKILL')));
    s.client?.disconnect();
    await s.redis?.stop();
  });
  return s;
}
