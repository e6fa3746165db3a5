// `jupiter testbed down`: undo everything `up` made, in reverse: the stack (deployed apps, agent
// containers, hub) through `stack down`, the engines (containers, dockerd, data and exec roots,
// cgroups), the home's Redis, the fault chains, namespaces, veths, bridge and FORWARD rule, and
// the files in the testbed folder. Works on a half-built testbed too (a failed `up`).
import { existsSync, readdirSync, rmdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Progress } from '../progress.js';
import { withStep } from '../progress.js';
import { stopPid } from '../stack/state.js';
import { removeNetwork } from './netns.js';
import { removeFaultChain } from './faults.js';
import { killProcessesWithEnv } from './procs.js';
import { cgroupDirs, removeCgroup, stopEngine } from './engines.js';
import { PREFIX } from './plan.js';
import { STATE_FILE, ownsPid, requireTestbedState } from './state.js';

/**
 * Everything `down` removed, a line each. `state`: the testbed's, when its folder is gone (`down
 * --id`, from the copy in its run root).
 */
export async function testbedDown(dir: string, progress: Progress, state = requireTestbedState(dir)): Promise<string[]> {
  const out: string[] = [];
  const tag = `${PREFIX}${state.id}`;
  if (existsSync(state.configFile)) {
    await withStep(progress, 'Stack down (apps, agent containers, hub)', async (step) => {
      try {
        const [{ stopStack, teardownAll }, { loadTestbedCluster }] = await Promise.all([import('../stack/embedded.js'), import('./up.js')]);
        const cluster = await loadTestbedCluster(state);
        // The testbed's Redis is configured, not the stack's own: `stack down` leaves its apps
        // alone, so they go first here (the home's sink processes among them).
        const lines = ownsPid(state.redis) ? (await teardownAll(cluster, state.redis!.url)).lines : [];
        lines.push(...(await stopStack(cluster)));
        out.push(...lines);
        step.update(`${lines.length} done`);
      } catch (e) {
        // The engines go below anyway, with every container on them.
        out.push(`stack down: ${(e as Error).message.split('\n')[0]}`);
      }
    });
  }
  if (state.redis) {
    // A hub its stack's state no longer names (the folder deleted): found by the Redis URL it was
    // given (this testbed's alone: its address and password), not by JUPITER_CONFIG, which a
    // user's shell may export too.
    const { HUB_REDIS_ENV } = await import('../stack/embedded.js');
    const stray = await killProcessesWithEnv(HUB_REDIS_ENV, state.redis.url);
    if (stray.length) out.push(`killed ${stray.length} process(es) of the testbed's stack that its state did not name (its hub)`);
  }
  const hosts = state.hosts.filter((h) => h.engine);
  if (hosts.length) {
    await withStep(progress, `Stopping ${hosts.length} Docker engines`, async (step) => {
      let done = 0;
      await Promise.all(hosts.map(async (h) => {
        out.push(...(await stopEngine(h)).map((l) => `${h.name}: ${l}`));
        step.update(`${++done}/${hosts.length}`);
      }));
    });
  }
  if (state.redis) {
    if (ownsPid(state.redis) && (await stopPid(state.redis.pid, 5000))) out.push(`stopped the home's redis-server (pid ${state.redis.pid})`);
    rmSync(state.redis.dir, { recursive: true, force: true });
  }
  await withStep(progress, 'Removing namespaces, veths, bridge and rules', async () => {
    for (const h of state.hosts) removeFaultChain(state, h);
    out.push(...removeNetwork(state));
  });
  for (const d of [state.runRoot, state.dataRoot]) {
    if (existsSync(d)) {
      rmSync(d, { recursive: true, force: true });
      out.push(`removed ${d}`);
    }
  }
  // cgroups left by an engine that died before its stop.
  for (const h of state.hosts) {
    const name = `${tag}-${h.name}`;
    if (await removeCgroup(name)) out.push(`removed cgroup ${name}`);
    else if (cgroupDirs(name).length > 0) out.push(`could NOT remove cgroup ${name} (still busy): rmdir it once its processes are gone`);
  }
  for (const f of [state.configFile, join(dir, 'stack'), join(dir, 'logs'), join(dir, STATE_FILE)]) rmSync(f, { recursive: true, force: true });
  if (!existsSync(dir)) {
    out.push(`its folder ${dir} was gone already`);
    return out;
  }
  if (readdirSync(dir).length === 0) rmdirSync(dir);
  out.push(`removed the testbed's files in ${dir}`);
  return out;
}
