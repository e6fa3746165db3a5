// `jupiter testbed up`: build the emulated network (namespaces, bridge, shaped veths, fault
// chains), the home's Redis, one Docker engine per host, write the cluster configuration, then
// bring the stack up through the same path a real cluster uses (`stack up`: hub, and the node
// agents as containers on each host's engine), and wait for every agent's heartbeat.
// Any failure tears down what was made (down.ts) and rethrows.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { inputError, runtimeError } from '../../config/errors.js';
import type { Topology } from '../../config/testbed/topology.js';
import { loadClusterConfig } from '../../config/cluster/load.js';
import type { Progress } from '../progress.js';
import { withStep } from '../progress.js';
import { planTestbed } from './plan.js';
import { checkTestbedHost } from './preflight.js';
import { createBridge, createHostNetwork } from './netns.js';
import { shapeHost } from './shaping.js';
import { createFaultChain } from './faults.js';
import { startHomeRedis } from './home.js';
import { startEngine } from './engines.js';
import { writeClusterConfig } from './cluster-config.js';
import { seedAgentImages } from './images.js';
import { readTestbedState, writeTestbedState, type TestbedState } from './state.js';
import { testbedDown } from './down.js';
import { forEachLimited } from './pool.js';

const ENGINES_AT_ONCE = 4;
export const CONFIG_NAME = 'jupiter.config.json';

/**
 * The testbed's cluster configuration, loaded the way every other command loads it. It becomes
 * this process's JUPITER_CONFIG, so the processes `stack up` starts (the hub) use it too.
 */
export function loadTestbedCluster(state: TestbedState): ReturnType<typeof loadClusterConfig> {
  process.env.JUPITER_CONFIG = state.configFile;
  return loadClusterConfig();
}

export interface UpTimings {
  networkMs: number;
  enginesMs: number;
  stackMs: number;
}

export async function testbedUp(topo: Topology, dir: string, progress: Progress, opts: { agentWaitSec?: number } = {}): Promise<{ state: TestbedState; timings: UpTimings }> {
  checkTestbedHost();
  const old = readTestbedState(dir);
  if (old) {
    throw inputError(`a testbed (${old.name}, ${old.hosts.length - 1} hosts) is already up in ${dir}${old.complete ? '' : ' (incomplete)'}`, {
      hint: `\`jupiter testbed down${dir === join(process.cwd(), 'jupiter-testbed') ? '' : ` --dir ${dir}`}\` first, or use another --dir`,
    });
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const state = planTestbed(topo, join(dir, CONFIG_NAME));
  const save = () => writeTestbedState(dir, state);
  save();
  const t0 = Date.now();
  const timings: UpTimings = { networkMs: 0, enginesMs: 0, stackMs: 0 };
  try {
    await withStep(progress, `Network ${state.net}.0/24: ${state.hosts.length} namespaces (home + ${state.hosts.length - 1} hosts)`, async (step) => {
      createBridge(state);
      save();
      for (const host of state.hosts) {
        createHostNetwork(state, host);
        shapeHost(state, host);
        createFaultChain(state, host);
        step.update(host.name);
      }
      save();
      step.update(`${state.hosts.length * (state.hosts.length - 1)} shaped directed pairs`);
    });
    const home = state.hosts[0]!;
    await withStep(progress, `Redis in the home (${home.addr})`, async () => {
      state.redis = await startHomeRedis(home, dir);
      save();
    });
    timings.networkMs = Date.now() - t0;
    const hosts = state.hosts.slice(1);
    await withStep(progress, `Starting ${hosts.length} Docker engines (one per host, in its namespace)`, async (step) => {
      let done = 0;
      await forEachLimited(hosts, ENGINES_AT_ONCE, async (h) => {
        h.engine = await startEngine(state, h, join(dir, 'logs'));
        save();
        step.update(`${++done}/${hosts.length}`);
      });
    });
    timings.enginesMs = Date.now() - t0 - timings.networkMs;
    writeClusterConfig(state);
    const t1 = Date.now();
    const cluster = await loadTestbedCluster(state);
    await seedAgentImages(state, cluster, dir, progress);
    const [{ ensureStack }, { waitForAgentHeartbeats }] = await Promise.all([import('../stack/embedded.js'), import('../stack/node-agents.js')]);
    const ep = await ensureStack(cluster, progress);
    await withStep(progress, `Waiting for ${ep.agents.length} agent heartbeats`, async (step) => {
      const w = await waitForAgentHeartbeats(cluster, ep.redisUrl, { timeoutMs: (opts.agentWaitSec ?? 60) * 1000, started: ep.agents });
      step.update(`${w.live.length}/${ep.agents.length} live`);
      if (w.missing.length) {
        throw runtimeError(`no heartbeat from the agent of ${w.missing.map((m) => `${m.node} (${m.state})`).join(', ')}`, {
          hint: `see the agent's log: ${w.missing.map((m) => m.logTail).filter(Boolean).join(' | ') || 'docker logs on its engine'}`,
        });
      }
    });
    timings.stackMs = Date.now() - t1;
    state.complete = true;
    save();
    return { state, timings };
  } catch (e) {
    progress.info('testbed up failed: removing what was made');
    await testbedDown(dir, progress).catch((down: Error) => {
      progress.info(`testbed up: removing it failed too (${down.message}); run \`jupiter testbed down --dir ${dir}\` again`);
    });
    throw e;
  }
}
