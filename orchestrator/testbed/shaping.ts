// Rates: each host shapes what it sends, per destination, on its own veth: an htb qdisc with one
// class per other host (its rate = the directed pair's rate) and a u32 filter on the destination
// address; anything else (the root namespace's control plane) goes to an unshaped class. Every
// byte a runner sends to another host or to the home (Redis) thus crosses its pair's rate.
// netem is not in this kernel: no latency or jitter can be added (documented in the README).
import { formatRate } from '../../config/testbed/topology.js';
import { nsWrap, run } from './sh.js';
import type { HostState, TestbedState } from './state.js';

const UNSHAPED = 1;
const UNSHAPED_RATE = '10gbit';

function classArgs(rateBps: number): string {
  const rate = formatRate(rateBps);
  // A bucket of ~4 ms of traffic (and at least a jumbo frame) keeps the class accurate at high rates.
  const burst = Math.max(16_000, Math.ceil(rateBps / 8 / 250));
  return `rate ${rate} ceil ${rate} burst ${burst} cburst ${burst}`;
}

function batch(ns: string, lines: string[]): void {
  const [wrap, ...pre] = nsWrap(ns);
  run(wrap!, [...pre, 'tc', '-batch', '-'], `${lines.join('\n')}\n`);
}

export function shapeHost(state: TestbedState, host: HostState): void {
  const dev = host.inner;
  const lines = [
    `qdisc add dev ${dev} root handle 1: htb default ${UNSHAPED}`,
    `class add dev ${dev} parent 1: classid 1:${UNSHAPED} htb rate ${UNSHAPED_RATE}`,
  ];
  for (const peer of state.hosts) {
    if (peer === host) continue;
    lines.push(`class add dev ${dev} parent 1: classid 1:${peer.classMinor} htb ${classArgs(state.rates[host.name]![peer.name]!)}`);
    lines.push(`filter add dev ${dev} parent 1: protocol ip prio 1 u32 match ip dst ${peer.addr}/32 flowid 1:${peer.classMinor}`);
  }
  batch(host.ns, lines);
}

/** Change the rate from `from` to `to` live (the class keeps its queue: streams continue). */
export function setRate(state: TestbedState, from: HostState, to: HostState, rateBps: number): void {
  batch(from.ns, [`class change dev ${from.inner} parent 1: classid 1:${to.classMinor} htb ${classArgs(rateBps)}`]);
  state.rates[from.name]![to.name] = rateBps;
}
