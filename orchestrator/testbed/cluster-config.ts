// The cluster configuration of a testbed (jupiter.config.json format): the home's Redis, each
// host's engine socket and address, the docker runtime, and probe settings that make a complete
// profile quick and a cut link visible within seconds (the agents' defaults suit real WANs).
import { writeFileSync } from 'node:fs';
import { cpus as osCpus } from 'node:os';
import { HOME } from '../../config/types.js';
import type { ClusterConfigFile } from '../../config/schemas/cluster-config.js';
import type { TestbedState } from './state.js';

export const AGENT_PORT = 7070;

/** Probes up to 1 MB (0.4 s on a 20 Mbit/s pair: enough for the fit) every 3 s; one over 3 s counts as failed, so a cut link shows within ~6 s. */
export const TESTBED_PROFILER = { probeSizesKb: [10, 100, 500, 1000], bootstrapRounds: 2, refreshSec: 3, probeTimeoutSec: 3 };

export function testbedClusterConfig(state: TestbedState): ClusterConfigFile {
  // A container's CPU limit must fit in its host's cgroup: cgroup v1 refuses a child quota above
  // its parent's (an agent or runner of 1 CPU on a 0.5-CPU edge host fails to start).
  const cpus = Math.min(1, ...state.hosts.map((h) => h.cpus ?? 1));
  const machineCores = osCpus().length;
  return {
    redis: { url: state.redis!.url },
    runtime: 'docker',
    ...(cpus < 1 ? { docker: { cpus } } : {}),
    stateDir: 'stack',
    profiling: TESTBED_PROFILER,
    nodes: state.hosts.map((h) => (h.name === HOME
      ? { name: h.name, host: h.addr }
      : {
        name: h.name, host: h.addr, docker: `unix://${h.engine!.socket}`, agent: `${h.addr}:${AGENT_PORT}`,
        // The host's quota is its engine's parent cgroup, which its containers cannot see; a host
        // without one may use all of the machine's cores.
        cpus: h.cpus ?? machineCores,
      })),
  };
}

export function writeClusterConfig(state: TestbedState): void {
  // 0600: the Redis URL holds the password.
  writeFileSync(state.configFile, `${JSON.stringify(testbedClusterConfig(state), null, 2)}\n`, { mode: 0o600 });
}
