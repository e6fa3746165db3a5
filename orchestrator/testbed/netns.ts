// Plumbing: a bridge in the root namespace, and per host a network namespace joined to it by a
// veth pair, with the host's address on its end. Hosts reach each other across the bridge at
// layer 2 (no routing, no forwarding); the root namespace has .1 on the bridge so the CLI and the
// hub reach Redis in the home and the engines' agents (that leg is control plane, unshaped).
import { readdirSync } from 'node:fs';
import { inNs, ip, run, tryRun } from './sh.js';
import { PREFIX } from './plan.js';
import type { HostState, TestbedState } from './state.js';

export function createBridge(state: TestbedState): void {
  ip('link', 'add', state.bridge, 'type', 'bridge');
  ip('addr', 'add', `${state.bridgeAddr}/24`, 'dev', state.bridge);
  ip('link', 'set', state.bridge, 'up');
  // With br_netfilter loaded, bridged frames traverse the root FORWARD chain; a Docker engine of
  // this machine sets its policy to DROP. This rule keeps the testbed's own traffic flowing.
  const rule = ['FORWARD', '-i', state.bridge, '-o', state.bridge, '-j', 'ACCEPT', '-m', 'comment', '--comment', `${PREFIX}${state.id}`];
  run('iptables', ['-I', ...rule]);
  state.forwardRule = rule;
}

export function createHostNetwork(state: TestbedState, host: HostState): void {
  ip('netns', 'add', host.ns);
  inNs(host.ns, 'ip', 'link', 'set', 'lo', 'up');
  ip('link', 'add', host.outer, 'type', 'veth', 'peer', 'name', host.inner, 'netns', host.ns);
  ip('link', 'set', host.outer, 'master', state.bridge);
  ip('link', 'set', host.outer, 'up');
  inNs(host.ns, 'ip', 'addr', 'add', `${host.addr}/24`, 'dev', host.inner);
  inNs(host.ns, 'ip', 'link', 'set', host.inner, 'up');
}

/** Remove the namespaces (their veths go with them), the bridge and the FORWARD rule; lines of what went. */
export function removeNetwork(state: TestbedState): string[] {
  const out: string[] = [];
  const tag = `${PREFIX}${state.id}`;
  const namespaces = new Set([...state.hosts.map((h) => h.ns), ...listNamespaces().filter((n) => n.startsWith(`${tag}-`))]);
  let gone = 0;
  for (const ns of namespaces) if (tryRun('ip', ['netns', 'del', ns])) gone++;
  if (gone) out.push(`removed ${gone} network namespace(s) ${tag}-*`);
  // Outer veth ends whose namespace was gone already (a failed `up`).
  for (const dev of listLinks().filter((l) => l.startsWith(tag) && l !== state.bridge)) tryRun('ip', ['link', 'del', dev]);
  if (tryRun('ip', ['link', 'del', state.bridge])) out.push(`removed bridge ${state.bridge}`);
  if (state.forwardRule) {
    while (tryRun('iptables', ['-D', ...state.forwardRule])) out.push(`removed iptables rule ${state.forwardRule.join(' ')}`);
  }
  return out;
}

export function listNamespaces(): string[] {
  try {
    return readdirSync('/var/run/netns');
  } catch {
    return [];
  }
}

export function listLinks(): string[] {
  return ip('-o', 'link').split('\n').map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1]).filter((x): x is string => Boolean(x));
}
