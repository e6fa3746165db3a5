// Real test hosts on one machine: a network namespace per node, a veth pair per node pair shaped
// with `tc qdisc ... tbf` (netem is not available here), and a bridge in the root namespace so
// every namespace reaches a Redis listening on the bridge's address. Addresses come from one
// private /24 that is unused on this machine (checked); traffic only ever goes to addresses the
// testbed created. Layout of 10.X.Y.0/24:
//   .1            bridge in the root namespace (Redis binds here)
//   .10+i/26      node i's leg on the bridge (control plane: Redis only)
//   .64+i/32      node i's own address, on its loopback; agents listen here
//   .128+4k+1/2   the /30 of shaped link k; /32 routes send node-to-node traffic over it
import { execFileSync } from 'node:child_process';

export interface TestbedNode {
  name: string;
  ns: string;
  /** Address the node's agent listens on. */
  addr: string;
}

export interface TestbedLink {
  a: number;
  b: number;
  mbit: number;
}

export interface Testbed {
  nodes: TestbedNode[];
  links: TestbedLink[];
  /** Address of the root namespace on the bridge (bind Redis here). */
  bridgeAddr: string;
  subnet: string;
  /** Shaped rate between two nodes in bytes/s (tc's mbit = 10^6 bit/s). */
  rateBytesPerSec(a: string, b: string): number;
  /** argv prefix running a command inside a node's namespace. */
  exec(node: string): string[];
  /** Re-shape the link between two nodes (both directions) to a new rate. */
  shape(a: string, b: string, mbit: number): void;
  /**
   * Drop packets `from` sends over its link to `to` (iptables in from's namespace): all of them,
   * or each with `probability` (`-m statistic --mode random`).
   */
  impair(from: string, to: string, probability?: number): void;
  /** Remove every impairment of both ends of the link. */
  heal(a: string, b: string): void;
  cleanup(): void;
}

export interface TestbedOptions {
  /** Prefix of every namespace and interface name (default `j`; at most 8 characters). */
  prefix?: string;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const inNs = (ns: string, ...args: string[]) => execFileSync('ip', ['netns', 'exec', ns, ...args], { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** undefined when namespaces, veths and tbf work here; otherwise why not. */
export function namespaceSupport(): string | undefined {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'creating network namespaces needs root';
  const ns = `jupiter-probe-${process.pid}`;
  try {
    ip('netns', 'add', ns);
  } catch (e) {
    return `ip netns add failed: ${(e as { stderr?: Buffer }).stderr?.toString().trim() || (e as Error).message}`;
  }
  try {
    inNs(ns, 'ip', 'link', 'add', 'jprobea', 'type', 'veth', 'peer', 'name', 'jprobeb');
    inNs(ns, 'tc', 'qdisc', 'add', 'dev', 'jprobea', 'root', 'tbf', 'rate', '8mbit', 'burst', '16kb', 'latency', '50ms');
    return undefined;
  } catch (e) {
    return `veth or tc tbf unavailable: ${(e as { stderr?: Buffer }).stderr?.toString().trim() || (e as Error).message}`;
  } finally {
    try {
      ip('netns', 'del', ns);
    } catch {
      // nothing to clean
    }
  }
}

function usedPrefixes(): string[] {
  const text = ip('-4', '-o', 'addr') + ip('-4', 'route', 'show', 'table', 'all');
  return [...text.matchAll(/\b(\d+\.\d+\.\d+\.\d+)(?:\/(\d+))?/g)].map((m) => `${m[1]}/${m[2] ?? '32'}`);
}

function toInt(a: string): number {
  return a.split('.').reduce((s, x) => s * 256 + Number(x), 0);
}

function overlaps(cidrA: string, cidrB: string): boolean {
  const [a, la] = cidrA.split('/') as [string, string];
  const [b, lb] = cidrB.split('/') as [string, string];
  const len = Math.min(Number(la), Number(lb));
  if (len === 0) return false; // the default route does not claim addresses
  const mask = len === 32 ? 0xffffffff : ~((1 << (32 - len)) - 1) >>> 0;
  return ((toInt(a) & mask) >>> 0) === ((toInt(b) & mask) >>> 0);
}

function pickSubnet(): string {
  const used = usedPrefixes();
  for (let i = 0; i < 200; i++) {
    const x = 100 + ((process.pid + i * 7) % 150);
    const y = (process.pid * 13 + i * 31) % 250;
    const cand = `10.${x}.${y}.0/24`;
    if (!used.some((u) => overlaps(u, cand))) return `10.${x}.${y}`;
  }
  throw new Error('no unused private /24 found for the testbed');
}

/** tbf needs a bucket of at least rate/HZ: a few ms of traffic, never under 16 KB. */
const burstOf = (mbit: number) => `${Math.max(16, Math.ceil((mbit * 1e6) / 8 / 250 / 1024))}kb`;

/** Build the testbed; on any failure it removes what it created and rethrows. */
export function createTestbed(names: string[], links: TestbedLink[], opts: TestbedOptions = {}): Testbed {
  const prefix = opts.prefix ?? 'j';
  links = links.map((l) => ({ ...l })); // shape() updates the rates
  // Interface names are limited to 15 characters: prefix (<= 8) + 4 + `l<k>a`.
  if (!/^[a-z][a-z0-9]{0,7}$/.test(prefix)) throw new Error(`testbed prefix ${JSON.stringify(prefix)}: 1-8 lowercase letters/digits`);
  const tag = `${prefix}${(process.pid % 46656).toString(36)}${Math.floor(Math.random() * 36).toString(36)}`;
  const net = pickSubnet();
  const bridge = `${tag}br`;
  const nodes: TestbedNode[] = names.map((name, i) => ({ name, ns: prefix === 'j' ? `jupiter-${tag}-${i}` : `${tag}-${i}`, addr: `${net}.${64 + i}` }));
  const created: string[] = [];
  let bridgeCreated = false;
  const cleanup = () => {
    for (const ns of created.splice(0)) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // already gone
      }
    }
    if (bridgeCreated) {
      try {
        ip('link', 'del', bridge);
      } catch {
        // already gone
      }
      bridgeCreated = false;
    }
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    bridgeCreated = true;
    ip('addr', 'add', `${net}.1/26`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    nodes.forEach((n, i) => {
      ip('netns', 'add', n.ns);
      created.push(n.ns);
      inNs(n.ns, 'ip', 'link', 'set', 'lo', 'up');
      inNs(n.ns, 'ip', 'addr', 'add', `${n.addr}/32`, 'dev', 'lo');
      const [outer, inner] = [`${tag}c${i}`, `${tag}d${i}`];
      ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner, 'netns', n.ns);
      ip('link', 'set', outer, 'master', bridge);
      ip('link', 'set', outer, 'up');
      inNs(n.ns, 'ip', 'addr', 'add', `${net}.${10 + i}/26`, 'dev', inner);
      inNs(n.ns, 'ip', 'link', 'set', inner, 'up');
    });
    links.forEach((l, k) => {
      const [na, nb] = [nodes[l.a]!, nodes[l.b]!];
      const [va, vb] = [`${tag}l${k}a`, `${tag}l${k}b`];
      ip('link', 'add', va, 'netns', na.ns, 'type', 'veth', 'peer', 'name', vb, 'netns', nb.ns);
      const [aa, ab] = [`${net}.${128 + 4 * k + 1}`, `${net}.${128 + 4 * k + 2}`];
      const burst = burstOf(l.mbit);
      for (const [ns, dev, addr, peerNode] of [[na.ns, va, aa, nb], [nb.ns, vb, ab, na]] as const) {
        inNs(ns, 'ip', 'addr', 'add', `${addr}/30`, 'dev', dev);
        inNs(ns, 'ip', 'link', 'set', dev, 'up');
        inNs(ns, 'tc', 'qdisc', 'add', 'dev', dev, 'root', 'tbf', 'rate', `${l.mbit}mbit`, 'burst', burst, 'latency', '50ms');
        inNs(ns, 'ip', 'route', 'add', `${peerNode.addr}/32`, 'via', addr === aa ? ab : aa, 'dev', dev);
      }
      // Static neighbours: a link saturated by a probe behind a tight tbf drops ARP too, and a
      // failed neighbour makes connects fail (EHOSTUNREACH) for a while; that is not what the
      // tests measure.
      const mac = (ns: string, dev: string) => /link\/ether ([0-9a-f:]+)/.exec(inNs(ns, 'ip', 'link', 'show', 'dev', dev))![1]!;
      inNs(na.ns, 'ip', 'neigh', 'replace', ab, 'lladdr', mac(nb.ns, vb), 'dev', va, 'nud', 'permanent');
      inNs(nb.ns, 'ip', 'neigh', 'replace', aa, 'lladdr', mac(na.ns, va), 'dev', vb, 'nud', 'permanent');
    });
  } catch (e) {
    cleanup();
    throw e;
  }
  const idx = new Map(nodes.map((n, i) => [n.name, i]));
  /** The link between two nodes: its index and each end's device. */
  const linkOf = (a: string, b: string) => {
    const [ia, ib] = [idx.get(a), idx.get(b)];
    const k = links.findIndex((x) => (x.a === ia && x.b === ib) || (x.a === ib && x.b === ia));
    if (k < 0) throw new Error(`no link between ${a} and ${b}`);
    const l = links[k]!;
    const dev = (n: string) => (idx.get(n) === l.a ? `${tag}l${k}a` : `${tag}l${k}b`);
    return { k, l, dev };
  };
  const nsOf = (n: string) => nodes[idx.get(n)!]!.ns;
  return {
    nodes,
    links,
    bridgeAddr: `${net}.1`,
    subnet: `${net}.0/24`,
    rateBytesPerSec(a, b) {
      const [ia, ib] = [idx.get(a), idx.get(b)];
      const l = links.find((x) => (x.a === ia && x.b === ib) || (x.a === ib && x.b === ia));
      if (!l) throw new Error(`no link between ${a} and ${b}`);
      return (l.mbit * 1e6) / 8;
    },
    exec: (node) => ['ip', 'netns', 'exec', nodes[idx.get(node)!]!.ns],
    shape(a, b, mbit) {
      const { l, dev } = linkOf(a, b);
      for (const n of [a, b]) inNs(nsOf(n), 'tc', 'qdisc', 'change', 'dev', dev(n), 'root', 'tbf', 'rate', `${mbit}mbit`, 'burst', burstOf(mbit), 'latency', '50ms');
      l.mbit = mbit;
    },
    impair(from, to, probability) {
      const { dev } = linkOf(from, to);
      const stat = probability === undefined ? [] : ['-m', 'statistic', '--mode', 'random', '--probability', String(probability)];
      inNs(nsOf(from), 'iptables', '-A', 'OUTPUT', '-o', dev(from), ...stat, '-j', 'DROP');
    },
    heal(a, b) {
      const { dev } = linkOf(a, b);
      for (const n of [a, b]) {
        // Delete our rules on that device one by one (the namespace is ours; nothing else is in it).
        for (;;) {
          const rules = inNs(nsOf(n), 'iptables', '-S', 'OUTPUT').split('\n').filter((r) => r.startsWith('-A OUTPUT') && r.includes(`-o ${dev(n)} `));
          if (rules.length === 0) break;
          inNs(nsOf(n), 'iptables', ...rules[0]!.replace(/^-A /, '-D ').split(' '));
        }
      }
    },
    cleanup,
  };
}
