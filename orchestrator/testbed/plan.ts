// Names and addresses of a new testbed. Everything it creates on the machine carries the prefix
// jtb<id> (namespaces, veths, bridge, iptables comments, /run and /var/lib folders, cgroups), so
// two testbeds (or other users of namespaces) never collide and `down` can sweep by prefix.
// Addresses: one private 10.251.X.0/24 unused on this machine (checked against every address and
// route): .1 the root namespace's leg on the bridge (the CLI and hub reach Redis and engines
// through it, unshaped), .2 the home, .10+i compute host i.
import { randomBytes } from 'node:crypto';
import { inputError, runtimeError } from '../../config/errors.js';
import { HOME } from '../../config/types.js';
import type { Topology } from '../../config/testbed/topology.js';
import { ip } from './sh.js';
import type { HostState, TestbedState } from './state.js';

export const PREFIX = 'jtb';
/** Where each testbed's run root (sockets, exec roots, a copy of its state) goes: <RUN_BASE>/jtb<id>. */
export const RUN_BASE = '/run';
const MAX_HOSTS = 200;

function toInt(a: string): number {
  return a.split('.').reduce((s, x) => s * 256 + Number(x), 0);
}

/** Whether two CIDR prefixes share addresses. */
export function overlaps(a: string, b: string): boolean {
  const [pa, la] = a.split('/') as [string, string];
  const [pb, lb] = b.split('/') as [string, string];
  const len = Math.min(Number(la), Number(lb));
  if (len === 0) return false; // a default route claims no addresses
  const mask = len === 32 ? 0xffffffff : ~((1 << (32 - len)) - 1) >>> 0;
  return ((toInt(pa) & mask) >>> 0) === ((toInt(pb) & mask) >>> 0);
}

/** Every prefix in use here: addresses and routes of the root namespace. */
export function usedPrefixes(): string[] {
  const text = ip('-4', '-o', 'addr') + ip('-4', 'route', 'show', 'table', 'all');
  return [...text.matchAll(/\b(\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?/g)].map((m) => `${m[1]}/${m[2] ?? '32'}`);
}

/** First three octets of the testbed's /24: the requested one (checked) or the first free 10.251.X. */
export function pickNet(requested?: string): string {
  const used = usedPrefixes();
  if (requested) {
    const clash = used.find((u) => overlaps(u, requested));
    if (clash) throw inputError(`subnet ${requested} is in use on this machine (${clash})`, { hint: 'leave "subnet" out to pick a free one, or choose another 10.X.Y.0/24' });
    return requested.replace(/\.0\/24$/, '');
  }
  for (let x = 0; x < 256; x++) {
    if (!used.some((u) => overlaps(u, `10.251.${x}.0/24`))) return `10.251.${x}`;
  }
  throw runtimeError('no unused 10.251.X.0/24 left on this machine', { hint: 'give "subnet" in the topology file' });
}

/** The state of a testbed about to be built (nothing created yet). */
export function planTestbed(topo: Topology, configFile: string): TestbedState {
  if (topo.hosts.length - 1 > MAX_HOSTS) throw inputError(`a testbed holds at most ${MAX_HOSTS} hosts, got ${topo.hosts.length - 1}`);
  const id = randomBytes(3).toString('hex').slice(0, 4);
  const tag = `${PREFIX}${id}`;
  const net = pickNet(topo.subnet);
  const hosts: HostState[] = topo.hosts.map((h, i) => ({
    name: h.name,
    ns: `${tag}-${h.name}`,
    addr: h.name === HOME ? `${net}.2` : `${net}.${10 + i - 1}`,
    outer: `${tag}o${i}`,
    inner: `${tag}i${i}`,
    classMinor: 10 + i,
    uplinkBps: h.uplinkBps,
    ...(h.cpus !== undefined ? { cpus: h.cpus } : {}),
  }));
  return {
    id,
    name: topo.name,
    net,
    bridge: `${tag}br`,
    bridgeAddr: `${net}.1`,
    hosts,
    rates: topo.rates,
    faults: {},
    runRoot: `${RUN_BASE}/${tag}`,
    dataRoot: `/var/lib/${tag}`,
    configFile,
    createdAt: Date.now(),
    complete: false,
  };
}

export function hostOf(state: TestbedState, name: string): HostState {
  const h = state.hosts.find((x) => x.name === name);
  if (!h) throw inputError(`no host ${name} in testbed ${state.name}`, { hint: `hosts are: ${state.hosts.map((x) => x.name).join(', ')}` });
  return h;
}
