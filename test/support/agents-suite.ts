// The hooks of the real-agent suites: one redis-server and client for the suite, the agents'
// environment pointing at it and at a temp folder of the suite's own, and every agent the suite
// spawned killed afterwards, that folder removed. (An agent killed with SIGKILL mid-probe keeps
// its probe's scratch folder; a later agent sweeps it, but none may come: the folder goes with
// the suite's instead of staying in the machine's temp folder.)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { AgentProc } from '../profilers/agent-procs.js';
import { startTestRedis, type TestRedis } from './redis.js';

export interface AgentsSuite {
  redis: TestRedis;
  client: Redis;
  /** JUPITER_REDIS_URL of the suite's Redis and TMPDIR of its own, plus the extra variables given. */
  env: NodeJS.ProcessEnv;
  /** Agents to SIGKILL after the suite. */
  agents: AgentProc[];
}

/** Register before/after; the returned object's fields are set in before() (register your own before() after this). */
export function agentsSuite(extraEnv: NodeJS.ProcessEnv = {}): AgentsSuite {
  const s = { agents: [] as AgentProc[] } as AgentsSuite;
  let tmp = '';
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'jupiter-agents-'));
    s.redis = await startTestRedis();
    s.client = new Redis(s.redis.url);
    s.env = { JUPITER_REDIS_URL: s.redis.url, TMPDIR: tmp, ...extraEnv };
  });
  after(async () => {
    await Promise.all(s.agents.map((a) => a.stop('SIGKILL')));
    s.client?.disconnect();
    await s.redis?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });
  return s;
}
