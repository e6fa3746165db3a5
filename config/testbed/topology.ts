// A testbed topology, resolved: every host with its uplink and CPU limit, the home, and the rate
// of every directed pair (bits/s). From a topology file (`file:line` errors) or a preset object.
// Rule for a pair without an explicit link: the slower of the two uplinks (a path is as fast as
// its slowest leg); an explicit link overrides it, both ways unless `oneWay`.
import { inputError } from '../errors.js';
import { HOME } from '../types.js';
import { checkSchema, parseJsonText } from '../app/json.js';
import { lazyValidator } from '../schemas/ajv.js';
import { testbedTopologySchema, type TopologyFile } from '../schemas/testbed-topology.js';

export const DEFAULT_UPLINK = '100mbit';

export interface TopologyHost {
  name: string;
  uplinkBps: number;
  /** CPU limit of everything that runs on the host (undefined: none). */
  cpus?: number;
}

export interface Topology {
  name: string;
  subnet?: string;
  /** The home first (name "home"), then the compute hosts in file order. */
  hosts: TopologyHost[];
  /** rates[from][to] in bits/s, for every ordered pair of distinct hosts (the home included). */
  rates: Record<string, Record<string, number>>;
}

const validate = lazyValidator<TopologyFile>(testbedTopologySchema);

const UNITS: Record<string, number> = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 };

/** '20mbit' -> 20e6 bits/s; undefined when it is not a rate. */
export function parseRate(text: string): number | undefined {
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*(bit|kbit|mbit|gbit)$/i.exec(text.trim());
  if (!m) return undefined;
  const bps = Number(m[1]) * UNITS[m[2]!.toLowerCase()]!;
  return bps >= 8000 && bps <= 100e9 ? bps : undefined;
}

/** 20e6 -> '20mbit' (for messages and tables). */
export function formatRate(bps: number): string {
  if (bps >= 1e9 && bps % 1e9 === 0) return `${bps / 1e9}gbit`;
  if (bps >= 1e6) return `${+(bps / 1e6).toFixed(3)}mbit`;
  return `${+(bps / 1e3).toFixed(3)}kbit`;
}

/** Line of the n-th (0-based) occurrence of `needle` after the first `"section"` key; 1 when absent. */
function lineOfNth(text: string, section: string, needle: string, n: number): number {
  let at = text.indexOf(`"${section}"`);
  if (at < 0) return 1;
  for (let i = 0; i <= n; i++) {
    const next = text.indexOf(needle, at + 1);
    if (next < 0) break;
    at = next;
  }
  return text.slice(0, at).split('\n').length;
}

/** Resolve a schema-valid topology; `where(kind, i)` gives the line of hosts[i] / links[i] for messages. */
export function resolveTopology(file: TopologyFile, fileName: string, where: (kind: 'hosts' | 'links', i: number) => number = () => 0): Topology {
  const at = (kind: 'hosts' | 'links', i: number) => {
    const line = where(kind, i);
    return line > 0 ? { file: fileName, line } : { file: fileName };
  };
  const rateOf = (text: string, what: string, loc: { file: string; line?: number }): number => {
    const bps = parseRate(text);
    if (bps === undefined) throw inputError(`${what}: ${JSON.stringify(text)} is out of range`, { ...loc, hint: 'rates go from 8kbit to 100gbit, e.g. "20mbit" or "1gbit"' });
    return bps;
  };
  const defaultUplink = rateOf(file.defaults?.uplink ?? DEFAULT_UPLINK, 'defaults.uplink', { file: fileName });
  const hosts: TopologyHost[] = [{ name: HOME, uplinkBps: file.home?.uplink ? rateOf(file.home.uplink, 'home.uplink', { file: fileName }) : defaultUplink }];
  const seen = new Set<string>([HOME]);
  file.hosts.forEach((h, i) => {
    if (h.name === HOME) throw inputError(`host ${HOME} is reserved for the home`, { ...at('hosts', i), hint: 'give the home\'s uplink under "home": {"uplink": ...} and name the hosts otherwise' });
    if (seen.has(h.name)) throw inputError(`host ${h.name} is listed twice`, { ...at('hosts', i), hint: 'host names must be unique' });
    seen.add(h.name);
    const cpus = h.cpus ?? file.defaults?.cpus;
    hosts.push({ name: h.name, uplinkBps: h.uplink ? rateOf(h.uplink, `uplink of ${h.name}`, at('hosts', i)) : defaultUplink, ...(cpus !== undefined ? { cpus } : {}) });
  });
  const uplink = new Map(hosts.map((h) => [h.name, h.uplinkBps]));
  const rates: Topology['rates'] = {};
  for (const a of hosts) {
    rates[a.name] = {};
    for (const b of hosts) if (a !== b) rates[a.name]![b.name] = Math.min(a.uplinkBps, b.uplinkBps);
  }
  (file.links ?? []).forEach((l, i) => {
    const [a, b] = l.between;
    for (const n of [a, b]) {
      if (!uplink.has(n)) throw inputError(`link ${a} - ${b}: no host ${n}`, { ...at('links', i), hint: `hosts are: ${[...uplink.keys()].join(', ')}` });
    }
    if (a === b) throw inputError(`link ${a} - ${b} joins a host to itself`, { ...at('links', i), hint: 'name two different hosts' });
    const bps = rateOf(l.rate, `rate of link ${a} - ${b}`, at('links', i));
    rates[a]![b] = bps;
    if (!l.oneWay) rates[b]![a] = bps;
  });
  return { name: file.name ?? 'testbed', ...(file.subnet ? { subnet: file.subnet } : {}), hosts, rates };
}

/** Parse and resolve the text of a topology file (`file` is used in messages). */
export function parseTopologyText(text: string, file: string): Topology {
  const data = parseJsonText(text, file, 'a testbed topology');
  checkSchema(validate(), data, text, file, 'see config/schemas/testbed-topology.ts (keys: name, subnet, defaults, home, hosts, links)');
  return resolveTopology(data, file, (kind, i) => (kind === 'hosts'
    ? lineOfNth(text, 'hosts', '"name"', i)
    : lineOfNth(text, 'links', '"between"', i)));
}
