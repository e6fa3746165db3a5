// Failures and loss, per directed pair, with iptables in the sending host's namespace: a chain of
// ours hooked into OUTPUT holds `-d <peer> -j DROP` for a cut link and `-m statistic --mode random
// --probability p -j DROP` for a lossy one. The chain is rebuilt from the state on every change,
// so `link` is idempotent. The chain dies with the namespace; `down` also flushes it first.
import { inNs, tryInNs } from './sh.js';
import { PREFIX } from './plan.js';
import type { HostState, TestbedState } from './state.js';

function chain(state: TestbedState): string {
  return `${PREFIX}${state.id}`;
}

export function pairKey(from: string, to: string): string {
  return `${from}>${to}`;
}

export function createFaultChain(state: TestbedState, host: HostState): void {
  inNs(host.ns, 'iptables', '-N', chain(state));
  inNs(host.ns, 'iptables', '-A', 'OUTPUT', '-j', chain(state));
}

/** Rewrite the host's chain from state.faults (every pair this host sends on). */
export function applyFaults(state: TestbedState, host: HostState): void {
  const c = chain(state);
  inNs(host.ns, 'iptables', '-F', c);
  for (const peer of state.hosts) {
    const f = state.faults[pairKey(host.name, peer.name)];
    if (!f) continue;
    if (f.down) inNs(host.ns, 'iptables', '-A', c, '-d', `${peer.addr}/32`, '-j', 'DROP');
    else if (f.lossPercent) {
      inNs(host.ns, 'iptables', '-A', c, '-d', `${peer.addr}/32`, '-m', 'statistic', '--mode', 'random', '--probability', String(f.lossPercent / 100), '-j', 'DROP');
    }
  }
}

/** Unhook and delete the chain (best effort: the namespace may be gone already). */
export function removeFaultChain(state: TestbedState, host: HostState): void {
  const c = chain(state);
  tryInNs(host.ns, 'iptables', '-D', 'OUTPUT', '-j', c);
  tryInNs(host.ns, 'iptables', '-F', c);
  tryInNs(host.ns, 'iptables', '-X', c);
}
