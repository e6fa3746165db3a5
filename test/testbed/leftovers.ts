// What a testbed left on this machine: everything `testbed down` should have removed.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isAlive } from '../../circe/runtime/pid.js';
import { HUB_REDIS_ENV } from '../../orchestrator/stack/embedded.js';
import { processCmdlines, processesWithEnv } from '../../orchestrator/testbed/procs.js';
import type { TestbedState } from '../../orchestrator/testbed/state.js';

const sh = (cmd: string, args: string[]): string => {
  try {
    return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] }).toString();
  } catch {
    return '';
  }
};

/** Everything of testbed jtb<id> still on the machine, one line each (empty: nothing left). */
export function leftovers(state: TestbedState, dir: string): string[] {
  const tag = `jtb${state.id}`;
  const out: string[] = [];
  const netns = existsSync('/var/run/netns') ? readdirSync('/var/run/netns').filter((n) => n.startsWith(tag)) : [];
  out.push(...netns.map((n) => `netns ${n}`));
  out.push(...sh('ip', ['-o', 'link']).split('\n').filter((l) => l.includes(tag)).map((l) => `link ${l.slice(0, 60)}`));
  out.push(...sh('tc', ['qdisc', 'show']).split('\n').filter((l) => l.includes(tag)).map((l) => `qdisc ${l}`));
  out.push(...sh('iptables-save', []).split('\n').filter((l) => l.includes(tag)).map((l) => `iptables ${l}`));
  for (const { pid, cmd } of processCmdlines()) {
    if (cmd.includes(`/run/${tag}`) || cmd.includes(`/var/lib/${tag}`) || cmd.includes(dir)) out.push(`process ${pid}: ${cmd.slice(0, 100)}`);
  }
  for (const d of [state.runRoot, state.dataRoot, dir]) if (existsSync(d)) out.push(`folder ${d}`);
  for (const c of existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup') : []) {
    const sub = join('/sys/fs/cgroup', c);
    try {
      out.push(...readdirSync(sub).filter((n) => n.startsWith(tag)).map((n) => `cgroup ${c}/${n}`));
    } catch {
      // not a folder
    }
  }
  // A zombie (exited, its parent init not yet reaping) is gone.
  if (state.redis && isAlive(state.redis.pid)) out.push(`redis pid ${state.redis.pid}`);
  // Its hub (named by the Redis URL it was given, not on its command line).
  if (state.redis) out.push(...processesWithEnv(HUB_REDIS_ENV, state.redis.url).map((pid) => `hub pid ${pid}`));
  return out;
}
