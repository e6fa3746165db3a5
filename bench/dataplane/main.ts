// npm run bench:dataplane — issue 12's acceptance bench, as root, through the real CLI:
//   testbed   3 hosts; home behind 10 Mbit/s, 200 Mbit/s between the hosts (the htb classes are
//             read back and checked, and raw TCP measures both kinds of link)
//   app       apps/camera pinned capture@node1 -> detect@node2 -> track@node3 (copies with static
//             placement lines and execution profiling off), docker runtime, one deployment per
//             data path side by side: camera-central, and camera-direct once `deploy --data-path`
//             exists (deployed with --data-path central / direct)
//   per data path, one after the other:
//     throughput  N triggers of 1 MiB frames (NC on the central path: its rate is the home link's
//                 from the first items on, and 100 items there would take minutes), closed loop
//                 (at most W items in flight): items/s over the whole run and steady (below),
//                 makespan p50; tc class byte counters before/after: bytes over the home's
//                 links vs between hosts (less the agents' probes, counted by iptables on their
//                 port); CPU seconds of each host's processes and the ms their CPU quota held containers back
//     isolated    1 MiB items one at a time: makespan p50, per-hop p50
//   raw TCP   N x 1 MiB node1 -> node2 -> node3 (a relay on node2) over the same links, right
//             before the last path's throughput run, as one stream (no window, no per-item
//             work: the links' own rate): items/s over the whole run and steady
// Steady items/s, the acceptance's direct/raw ratio: (n - 1) / (the last item's completion - the
// first one's), for the paths and for raw TCP alike: completions are the items' done times at the
// home (the sink's record) and, for raw TCP, the times each 1 MiB was in whole at node3. The
// pipeline's fill (the first item's makespan: capture, two transfers, three tasks) is left out
// for both; what remains is the rate the slowest stage sustains once items queue before it.
//   small     8x8-pixel frames (~0.1-0.3 KB per hop) one at a time, alternating between the data
//             paths: per-hop p50
// Per hop: the receiving task's start minus the sending task's finish (runtime records; one
// machine, one clock); source hop: capture's start minus the item's entry; sink hop: the item's
// end minus track's finish.
// Environment: BENCH_ITEMS (100), BENCH_CENTRAL_ITEMS (40), BENCH_WINDOW (8), BENCH_ISOLATED (5), BENCH_SMALL (20),
// BENCH_PATHS (central,direct: those deploy knows), BENCH_RESULTS (bench/results/dataplane.json),
// BENCH_TESTBED_DIR (a testbed of this topology already up: used, and left up).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec } from '../../config/types.js';
import { HOME } from '../../config/types.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys } from '../../circe/queue/keys.js';
import { execOrThrow } from '../../circe/queue/transport.js';
import { submitItems } from '../../circe/home/source.js';
import { itemResults } from '../../circe/home/wait.js';
import { readDeployment, readMapping } from '../../orchestrator/deploy/record.js';
import { renderTable } from '../../orchestrator/report/table.js';
import { jupiter, log, median } from '../cli.js';
import type { TestbedState } from '../../orchestrator/testbed/state.js';
import { AGENT_PORT } from '../../orchestrator/testbed/cluster-config.js';
import { DEFAULT_PREFIX } from '../../config/redis-keys.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const cli = join(repo, 'bin', 'jupiter.js');
const tcpTool = join(here, 'tcp.js');
const num = (v: string | undefined, d: number): number => (v && Number(v) > 0 ? Number(v) : d);
const N = num(process.env.BENCH_ITEMS, 100);
const NC = num(process.env.BENCH_CENTRAL_ITEMS, 40);
const itemsOf = (path: string): number => (path === 'central' ? NC : N);
const WINDOW = num(process.env.BENCH_WINDOW, 8);
const ISOLATED = num(process.env.BENCH_ISOLATED, 5);
const SMALL = num(process.env.BENCH_SMALL, 20);
const MIB = 1024 * 1024;
const HOME_RATE = 10e6;
const HOST_RATE = 200e6;
const HOSTS = ['node1', 'node2', 'node3'];
const PIN = { capture: 'node1', detect: 'node2', track: 'node3' } as const;
const TASKS = ['capture', 'detect', 'track'] as const;
const HOPS = ['home->capture', 'capture->detect', 'detect->track', 'track->home'] as const;
const SMALL_SIZE = 8; // 8 x 8 pixels


// ---- the testbed's htb classes: rates and byte counters -------------------------------------

interface ClassStat {
  from: string;
  /** A host, or 'unshaped' (the class of everything else: the root namespace's control plane). */
  to: string;
  rateBps: number;
  bytes: number;
}

const RATE_UNITS: Record<string, number> = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 };

function classStats(state: TestbedState): ClassStat[] {
  const out: ClassStat[] = [];
  for (const h of state.hosts) {
    const text = execFileSync('nsenter', [`--net=/var/run/netns/${h.ns}`, 'tc', '-s', 'class', 'show', 'dev', h.inner]).toString();
    for (const block of text.split(/\n(?=class )/)) {
      const m = /^class htb 1:(\d+) .*?\brate (\d+(?:\.\d+)?)([KMG]?bit)[\s\S]*?Sent (\d+) bytes/.exec(block);
      if (!m) continue;
      const minor = Number(m[1]);
      const to = state.hosts.find((x) => x.classMinor === minor)?.name ?? 'unshaped';
      out.push({ from: h.name, to, rateBps: Number(m[2]) * RATE_UNITS[m[3]!.toLowerCase()]!, bytes: Number(m[4]) });
    }
  }
  return out;
}

type Counters = Record<string, number>; // "from>to" -> bytes
const diff = (a: Counters, b: Counters): Counters => Object.fromEntries(Object.keys(b).map((k) => [k, b[k]! - (a[k] ?? 0)]));

const AGENT_TAG = 'jtb-bench-agent-port';
const ALL_TAG = 'jtb-bench-all';

/**
 * Count, in every host's namespace, what it sends to each other host: everything, and what goes to
 * that host's agent port or from its own (TCP: the agents' transfer probes, their answers and
 * ACKs; UDP: the loss probes' echoes). iptables rules without a target only count. The
 * namespaces, and these rules with them, go at `testbed down`.
 */
function countAgentTraffic(state: TestbedState): void {
  for (const h of state.hosts.filter((x) => x.name !== HOME)) {
    const rules: string[][] = [];
    for (const peer of state.hosts.filter((x) => x !== h && x.name !== HOME)) {
      rules.push(['-d', `${peer.addr}/32`, '-m', 'comment', '--comment', ALL_TAG]);
      // UDP: loss probes and their echoes go from the agent port to the agent port (one rule, or
      // they count twice).
      for (const [proto, dir] of [['tcp', '--dport'], ['tcp', '--sport'], ['udp', '--dport']]) {
        rules.push(['-d', `${peer.addr}/32`, '-p', proto!, dir!, String(AGENT_PORT), '-m', 'comment', '--comment', AGENT_TAG]);
      }
    }
    for (const r of rules) execFileSync('nsenter', [`--net=/var/run/netns/${h.ns}`, 'iptables', '-w', '-I', 'OUTPUT', ...r]);
  }
}

/** iptables byte counters per directed pair between hosts: everything, and the agents' share. */
function pairCounters(state: TestbedState): { all: Counters; agents: Counters } {
  const all: Counters = {};
  const agents: Counters = {};
  for (const h of state.hosts.filter((x) => x.name !== HOME)) {
    const text = execFileSync('nsenter', [`--net=/var/run/netns/${h.ns}`, 'iptables', '-w', '-S', 'OUTPUT', '-v']).toString();
    for (const l of text.split('\n')) {
      const into = l.includes(AGENT_TAG) ? agents : l.includes(ALL_TAG) ? all : undefined;
      const dst = /-d (\S+)\/32/.exec(l)?.[1];
      const to = state.hosts.find((x) => x.addr === dst)?.name;
      if (!into || !to) continue;
      into[`${h.name}>${to}`] = (into[`${h.name}>${to}`] ?? 0) + Number(/-c \d+ (\d+)/.exec(l)?.[1] ?? 0);
    }
  }
  return { all, agents };
}

interface Snapshot {
  tc: Counters;
  ipt: { all: Counters; agents: Counters };
  cpu: Record<string, number>;
  throttled: Record<string, number>;
}
const snapshot = (state: TestbedState): Snapshot => ({ tc: Object.fromEntries(classStats(state).map((c) => [`${c.from}>${c.to}`, c.bytes])), ipt: pairCounters(state), cpu: cpuPerHost(state), throttled: throttledPerHost(state) });

interface Traffic {
  seconds: number;
  /** Bytes per directed pair during the phase (htb class counters), the agents' share of them, and the rest. */
  pairs: Counters;
  agents: Counters;
  net: Counters;
  /** MiB, without the agents' traffic: hosts -> home, home -> hosts, between hosts, home -> root namespace (the sink's and the bench's reads: control plane, unshaped). */
  toHome: number;
  fromHome: number;
  hostToHost: number;
  agentsHostToHost: number;
  homeControl: number;
  /** CPU seconds each host's processes used during the phase, and the machine's 1-minute load at its end. */
  cpuSec: Record<string, number>;
  /** ms each host's containers were held back by their CPU quota during the phase. */
  throttledMs: Record<string, number>;
  load1: number;
}

function traffic(a: Snapshot, b: Snapshot, seconds: number): Traffic {
  const pairs = diff(a.tc, b.tc);
  const all = diff(a.ipt.all, b.ipt.all);
  const agentsIpt = diff(a.ipt.agents, b.ipt.agents);
  // iptables counts IP packets before segmentation, the htb class counts frames on the wire: the
  // agents' share of a pair's class bytes is their share of its iptables bytes.
  const agents = Object.fromEntries(Object.entries(agentsIpt).map(([k, v]) => [k, all[k] ? Math.round((pairs[k] ?? 0) * Math.min(1, v / all[k]!)) : 0]));
  const net = Object.fromEntries(Object.entries(pairs).map(([k, v]) => [k, v - (agents[k] ?? 0)]));
  const sum = (c: Counters, f: (from: string, to: string) => boolean) => Object.entries(c).filter(([k]) => f(...(k.split('>') as [string, string]))).reduce((s, [, v]) => s + v, 0) / MIB;
  const between = (f: string, t: string) => HOSTS.includes(f) && HOSTS.includes(t);
  return {
    seconds,
    pairs,
    agents,
    net,
    toHome: sum(net, (f, t) => f !== HOME && t === HOME),
    fromHome: sum(net, (f, t) => f === HOME && HOSTS.includes(t)),
    hostToHost: sum(net, between),
    agentsHostToHost: sum(agents, between),
    homeControl: sum(net, (f, t) => f === HOME && t === 'unshaped'),
    cpuSec: Object.fromEntries(Object.keys(b.cpu).map((k) => [k, +(b.cpu[k]! - (a.cpu[k] ?? 0)).toFixed(2)])),
    throttledMs: Object.fromEntries(Object.keys(b.throttled).map((k) => [k, Math.round(b.throttled[k]! - (a.throttled[k] ?? 0))])),
    load1: loadavg()[0]!,
  };
}

/** The shaped rates, checked: home <-> host 10 Mbit/s, host <-> host 200 Mbit/s. */
function checkRates(state: TestbedState): Array<{ from: string; to: string; mbit: number; want: number }> {
  const rows = classStats(state).filter((c) => c.to !== 'unshaped').map((c) => ({
    from: c.from, to: c.to, mbit: c.rateBps / 1e6, want: (c.from === HOME || c.to === HOME ? HOME_RATE : HOST_RATE) / 1e6,
  }));
  const bad = rows.filter((r) => Math.abs(r.mbit - r.want) > 0.01 * r.want);
  if (rows.length !== 12 || bad.length) throw new Error(`testbed classes are not as the bench needs: ${JSON.stringify(rows)}`);
  return rows;
}

// ---- CPU per host ---------------------------------------------------------------------------

const TICK = 100; // USER_HZ

/** CPU seconds used so far by each host's engine (dockerd, containerd, shims, containers) and by the home's Redis. */
function cpuPerHost(state: TestbedState): Record<string, number> {
  const { cpu, pids } = hostProcesses(state);
  return Object.fromEntries([...pids].map(([h, set]) => [h, [...set].reduce((a, q) => a + (cpu.get(q) ?? 0), 0)]));
}

/** Each host's processes (and the home Redis's), with the CPU seconds of every process. */
function hostProcesses(state: TestbedState): { cpu: Map<number, number>; pids: Map<string, Set<number>> } {
  const children = new Map<number, number[]>();
  const cpu = new Map<number, number>();
  const cmd = new Map<number, string>();
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      children.set(Number(f[1]), [...(children.get(Number(f[1])) ?? []), Number(p)]);
      cpu.set(Number(p), (Number(f[11]) + Number(f[12])) / TICK);
      cmd.set(Number(p), readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      // gone
    }
  }
  const tree = (roots: number[]): Set<number> => {
    const seen = new Set<number>();
    const walk = (q: number): void => {
      if (seen.has(q)) return;
      seen.add(q);
      for (const c of children.get(q) ?? []) walk(c);
    };
    roots.forEach(walk);
    return seen;
  };
  const pids = new Map<string, Set<number>>();
  for (const h of state.hosts.filter((x) => x.engine)) pids.set(h.name, tree([...cmd].filter(([, c]) => c.includes(`${state.runRoot}/${h.name}/`)).map(([q]) => q)));
  if (state.redis) pids.set('home redis', tree([state.redis.pid]));
  return { cpu, pids };
}

/**
 * Milliseconds the CPU quota held back the containers of each host so far (CFS throttling: each
 * container may use `docker.cpus` per 100 ms period, and waits for the next period beyond it).
 */
function throttledPerHost(state: TestbedState): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [h, set] of hostProcesses(state).pids) {
    if (h === 'home redis') continue;
    const groups = new Set<string>();
    for (const q of set) {
      try {
        for (const line of readFileSync(`/proc/${q}/cgroup`, 'utf8').split('\n')) {
          const [, ctrl, path] = line.split(':');
          if (path && path !== '/' && (ctrl === '' || ctrl!.split(',').includes('cpu'))) groups.add(ctrl === '' ? join('/sys/fs/cgroup', path) : join('/sys/fs/cgroup', 'cpu', path));
        }
      } catch {
        // gone
      }
    }
    let ms = 0;
    for (const g of groups) {
      try {
        const st = readFileSync(join(g, 'cpu.stat'), 'utf8');
        const v1 = /^throttled_time (\d+)/m.exec(st);
        const v2 = /^throttled_usec (\d+)/m.exec(st);
        ms += v1 ? Number(v1[1]) / 1e6 : v2 ? Number(v2[1]) / 1e3 : 0;
      } catch {
        // gone
      }
    }
    out[h] = ms;
  }
  return out;
}

// ---- raw TCP ------------------------------------------------------------------------------

interface TcpProc {
  lines: Array<Record<string, unknown>>;
  done: Promise<Record<string, unknown>>;
  listening: Promise<void>;
}

function tcp(ns: string, args: Array<string | number>): TcpProc {
  const c = spawn('nsenter', [`--net=/var/run/netns/${ns}`, process.execPath, tcpTool, ...args.map(String)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  let err = '';
  let onListen: () => void = () => undefined;
  const listening = new Promise<void>((r) => (onListen = r));
  c.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const l = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      if (l.listening) onListen();
      else lines.push(l);
    }
  });
  c.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<Record<string, unknown>>((res, rej) => {
    const timer = setTimeout(() => c.kill('SIGKILL'), 120_000);
    c.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0 && lines.length) res(lines[lines.length - 1]!);
      else rej(new Error(`tcp ${args.join(' ')} in ${ns} exited ${code}: ${err}`));
    });
  });
  return { lines, done, listening };
}

const TCP_PORT = 39101;

/**
 * count x size bytes from hosts[0] through hosts[1..n-2] (relays) to hosts[n-1]: seconds from the
 * first byte sent to the last received, and the steady items/s at the last host (steadyRate).
 */
async function tcpChain(state: TestbedState, hosts: string[], count: number, size: number): Promise<{ seconds: number; steady: number }> {
  const h = (n: string) => state.hosts.find((x) => x.name === n)!;
  const procs: TcpProc[] = [];
  const last = hosts[hosts.length - 1]!;
  const sink = tcp(h(last).ns, ['sink', h(last).addr, TCP_PORT, count * size, size]);
  procs.push(sink);
  await sink.listening;
  for (let i = hosts.length - 2; i >= 1; i--) {
    const r = tcp(h(hosts[i]!).ns, ['relay', h(hosts[i]!).addr, TCP_PORT, h(hosts[i + 1]!).addr, TCP_PORT]);
    procs.push(r);
    await r.listening;
  }
  const src = tcp(h(hosts[0]!).ns, ['source', h(hosts[1]!).addr, TCP_PORT, count, size]);
  const [s, k] = await Promise.all([src.done, sink.done, ...procs.slice(1).map((p) => p.done)]);
  return { seconds: ((k!.lastAt as number) - (s!.startAt as number)) / 1000, steady: steadyRate(k!.itemsAt as number[]) };
}

/**
 * Items per second once the pipeline is full: (n - 1) / (last completion - first completion), in
 * ms since the epoch. Leaves out the fill (the first item's way through) and nothing else.
 */
function steadyRate(doneAt: number[]): number {
  const t = [...doneAt].sort((a, b) => a - b);
  return t.length < 2 ? Number.NaN : ((t.length - 1) * 1000) / (t[t.length - 1]! - t[0]!);
}

// ---- the app, pinned ----------------------------------------------------------------------

/**
 * apps/camera with static placement lines, no execution profiling and one sample trigger (deploy
 * --wait runs it: the first warm-up item). Not none: the docker runtime's app image leaves an
 * empty sample_input/ out, and the runners then fail to load the app.
 */
function pinnedApp(parent: string, name: string): string {
  const dir = join(parent, name);
  cpSync(join(repo, 'apps', 'camera'), dir, { recursive: true });
  for (const f of readdirSync(join(dir, 'sample_input'))) if (f !== 'f1.trigger') rmSync(join(dir, 'sample_input', f));
  const conf = readFileSync(join(dir, 'configuration.txt'), 'utf8').trimEnd();
  writeFileSync(join(dir, 'configuration.txt'), `${conf}\n${Object.entries(PIN).map(([t, n]) => `${t} ${n}`).join('\n')}\n`);
  const cfg = JSON.parse(readFileSync(join(dir, 'scripts', 'config.json'), 'utf8')) as { exec_profiler: Record<string, boolean> };
  for (const t of Object.keys(cfg.exec_profiler)) cfg.exec_profiler[t] = false;
  writeFileSync(join(dir, 'scripts', 'config.json'), `${JSON.stringify(cfg, null, 2)}\n`);
  return dir;
}

function triggers(dir: string, tag: string, n: number, small: boolean): string[] {
  mkdirSync(dir, { recursive: true });
  return Array.from({ length: n }, (_, i) => {
    const f = join(dir, `${tag}${String(i).padStart(3, '0')}.trigger`);
    writeFileSync(f, `${JSON.stringify({ camera: 'cam0', frame: i, seed: 42, ...(small ? { width: SMALL_SIZE, height: SMALL_SIZE } : {}) })}\n`);
    return f;
  });
}

// ---- items: submit, wait, records -----------------------------------------------------------

interface Ctx {
  redis: Redis;
  prefix: string;
  app: AppSpec;
  runId: string;
}

interface ItemRecord {
  item: string;
  enteredAt: number;
  doneAt: number;
  makespanMs: number;
  /** ms per hop (HOPS order) and the bytes that crossed it (the receiving task's input). */
  hops: Record<string, number>;
  hopBytes: Record<string, number>;
  /**
   * The host-to-host hops split at the job's creation (the receiver's `enter`): `<hop> commit` =
   * sender's finish -> its commit created the receiver's job; `<hop> receive` = job -> the
   * receiver's start (waiting in the queue, taken, bytes fetched, written). And each task's run.
   */
  parts: Record<string, number>;
}

async function records(ctx: Ctx, items: string[]): Promise<ItemRecord[]> {
  const k = appKeys(ctx.prefix, ctx.app.name);
  const pipe = ctx.redis.pipeline();
  for (const id of items) pipe.hmget(k.item(id), 'enteredAt', 'doneAt', 'makespanMs', 'failed').hgetall(k.rt(id));
  const res = await execOrThrow(pipe);
  return items.map((item, i) => {
    const [enteredAt, doneAt, makespanMs, failed] = (res[2 * i] as Array<string | null>).map(Number) as [number, number, number, number];
    if (failed === 1) throw new Error(`item ${item} failed: see \`jupiter status camera\``);
    const rt = res[2 * i + 1] as Record<string, string>;
    const t = (task: string, f: string) => Number(rt[`${task}|${f}`]);
    const hops: Record<string, number> = {
      'home->capture': t('capture', 'start') - enteredAt,
      'capture->detect': t('detect', 'start') - t('capture', 'finish'),
      'detect->track': t('track', 'start') - t('detect', 'finish'),
      'track->home': doneAt - t('track', 'finish'),
    };
    const hopBytes: Record<string, number> = {
      'home->capture': t('capture', 'in'),
      'capture->detect': t('detect', 'in'),
      'detect->track': t('track', 'in'),
    };
    const parts: Record<string, number> = {};
    for (const [from, to] of [['capture', 'detect'], ['detect', 'track']] as const) {
      parts[`${from}->${to} commit`] = t(to, 'enter') - t(from, 'finish');
      parts[`${from}->${to} receive`] = t(to, 'start') - t(to, 'enter');
    }
    for (const task of TASKS) parts[`${task} run`] = t(task, 'finish') - t(task, 'start');
    return { item, enteredAt, doneAt, makespanMs, hops, hopBytes, parts };
  });
}

/**
 * Keep at most `window` items in flight until every file went through; their records. A finished
 * item is seen by a blocking read of the app's events stream (its item-done event), so the next
 * one is submitted at once and the bench itself costs the machine little CPU while it waits
 * (polling the in-flight items' records every 10 ms took ~0.16 of a core, CPU the measured
 * runners share); the records are looked at once a second as well, as DoneWaiter does.
 */
async function closedLoop(ctx: Ctx, files: string[], window: number, label: string, timeoutMs: number): Promise<ItemRecord[]> {
  const queue = [...files];
  const inflight = new Set<string>();
  const all: string[] = [];
  const deadline = Date.now() + timeoutMs;
  let finished = 0;
  let shown = 0;
  const t0 = Date.now();
  const events = appKeys(ctx.prefix, ctx.app.name).events;
  const blocking = ctx.redis.duplicate();
  blocking.on('error', () => undefined);
  let cursor = (await ctx.redis.xrevrange(events, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
  let lookedAt = Date.now();
  const finish = (r: { item: string; failed?: boolean; error?: string }): void => {
    if (!inflight.has(r.item)) return;
    if (r.failed) throw new Error(`${label}: item ${r.item} failed: ${r.error ?? 'see its record'}`);
    inflight.delete(r.item);
    finished++;
  };
  try {
    while (queue.length > 0 || inflight.size > 0) {
      if (inflight.size < window && queue.length > 0) {
        const batch = queue.splice(0, window - inflight.size);
        for (const it of await submitItems(ctx.redis, ctx.prefix, ctx.app, batch, { runId: ctx.runId })) {
          inflight.add(it.item);
          all.push(it.item);
        }
      }
      const res = await blocking.xread('COUNT', 1000, 'BLOCK', 200, 'STREAMS', events, cursor);
      for (const [, entries] of res ?? []) {
        for (const [id, fields] of entries) {
          cursor = id;
          const json = fields[1];
          if (!json?.includes('"item-done"')) continue;
          const ev = JSON.parse(json) as { type?: string; item?: string; failed?: boolean; error?: string };
          if (ev.type === 'item-done' && ev.item) finish({ item: ev.item, failed: ev.failed, error: ev.error });
        }
      }
      // With the window full, events are let pile up for a moment: one read takes a few items'
      // events instead of one read per event (~10 per item), for ~10 ms more before a refill.
      if (inflight.size >= window || queue.length === 0) await new Promise((r) => setTimeout(r, 20));
      if (Date.now() - lookedAt >= 1000) {
        lookedAt = Date.now();
        for (const r of await itemResults(ctx.redis, ctx.prefix, ctx.app.name, [...inflight])) if (r.done) finish(r);
      }
      if (Date.now() > deadline) throw new Error(`${label}: ${inflight.size + queue.length} of ${files.length} items not done after ${timeoutMs / 1000} s`);
      if (files.length > 1 && (Date.now() - shown > 5000 || finished === files.length)) {
        shown = Date.now();
        log(`  ${label}: ${finished}/${files.length} done (${(finished / ((Date.now() - t0) / 1000)).toFixed(2)} items/s so far)`);
      }
    }
  } finally {
    blocking.disconnect();
  }
  return records(ctx, all);
}

interface HopStats {
  p50Ms: Record<string, number>;
  bytes: Record<string, number>;
  partsP50Ms: Record<string, number>;
}

function hopStats(recs: ItemRecord[]): HopStats {
  return {
    p50Ms: Object.fromEntries(HOPS.map((h) => [h, +median(recs.map((r) => r.hops[h]!)).toFixed(2)])),
    bytes: Object.fromEntries(HOPS.slice(0, 3).map((h) => [h, Math.round(median(recs.map((r) => r.hopBytes[h]!)))])),
    partsP50Ms: Object.fromEntries(Object.keys(recs[0]?.parts ?? {}).map((k) => [k, +median(recs.map((r) => r.parts[k]!)).toFixed(2)])),
  };
}

/** Median over items of the two host-to-host hops' mean. */
const interHopP50 = (recs: ItemRecord[]): number => median(recs.map((r) => (r.hops['capture->detect']! + r.hops['detect->track']!) / 2));

interface PathResult {
  path: string;
  deploySec: number;
  throughput: { items: number; window: number; seconds: number; itemsPerSec: number; steadyItemsPerSec: number; makespanP50Ms: number; makespanP95Ms: number; hops: HopStats; traffic: Traffic };
  isolated: { items: number; makespanP50Ms: number; hops: HopStats; interHopP50Ms: number; traffic: Traffic };
  small?: { items: number; makespanP50Ms: number; hops: HopStats; interHopP50Ms: number };
}

interface Deployed {
  path: string;
  deploySec: number;
  ctx: Ctx;
  trig: string;
}

/** A pinned copy of camera deployed as `camera-<path>` with that data path, checked and warmed up. */
async function deployPath(path: string, dataPathFlag: boolean, state: TestbedState, cwd: string, redis: Redis): Promise<Deployed> {
  const name = `camera-${path}`;
  const appDir = pinnedApp(join(cwd, 'apps'), name);
  log(`== ${name}: deploying, ${Object.entries(PIN).map(([t, n]) => `${t}@${n}`).join(', ')}, data path ${path} (docker runtime)`);
  const t0 = performance.now();
  await jupiter(cwd, ['deploy', appDir, '--runtime', 'docker', '--wait', '--timeout', '300', ...(dataPathFlag ? ['--data-path', path] : [])], { JUPITER_CONFIG: state.configFile });
  const deploySec = (performance.now() - t0) / 1000;
  log(`  deployed in ${deploySec.toFixed(1)} s`);
  const prefix = DEFAULT_PREFIX;
  const dep = await readDeployment(redis, prefix, name);
  if (!dep) throw new Error(`${name} is not deployed after deploy`);
  const mapping = (await readMapping(redis, prefix, name))?.mapping;
  if (Object.entries(PIN).some(([t, n]) => mapping?.[t] !== n)) throw new Error(`${name} was placed ${JSON.stringify(mapping)}, not ${JSON.stringify(PIN)}`);
  const ctx: Ctx = { redis, prefix, app: await loadApp(dep.appDir), runId: dep.runId };
  const trig = join(cwd, 'triggers', path);
  // Warm-up: module loads, JIT, connections.
  await closedLoop(ctx, [...triggers(trig, 'warm', 3, false), ...triggers(trig, 'warmsmall', 3, true)], 1, `${name} warm-up`, 120_000);
  return { path, deploySec, ctx, trig };
}

async function phase<T>(state: TestbedState, fn: () => Promise<T>): Promise<{ value: T; traffic: Traffic }> {
  const c0 = snapshot(state);
  const p0 = performance.now();
  const value = await fn();
  const seconds = (performance.now() - p0) / 1000;
  return { value, traffic: traffic(c0, snapshot(state), seconds) };
}

/** The 1 MiB runs of one deployment: throughput (closed loop), then isolated items. */
async function measureBig(d: Deployed, state: TestbedState): Promise<PathResult> {
  const { path, ctx, trig } = d;
  const n = itemsOf(path);
  log(`  ${path}: throughput, ${n} x 1 MiB frames, at most ${WINDOW} in flight`);
  const big = await phase(state, () => closedLoop(ctx, triggers(trig, 'big', n, false), WINDOW, `${path} 1 MiB`, 600_000));
  const first = Math.min(...big.value.map((r) => r.enteredAt));
  const lastDone = Math.max(...big.value.map((r) => r.doneAt));
  const seconds = (lastDone - first) / 1000;
  const ms = big.value.map((r) => r.makespanMs).sort((a, b) => a - b);
  const throughput = {
    items: n, window: WINDOW, seconds, itemsPerSec: n / seconds, steadyItemsPerSec: steadyRate(big.value.map((r) => r.doneAt)), makespanP50Ms: median(ms), makespanP95Ms: ms[Math.min(ms.length - 1, Math.ceil(0.95 * ms.length) - 1)]!,
    hops: hopStats(big.value), traffic: big.traffic,
  };
  log(`  ${path} 1 MiB: ${throughput.itemsPerSec.toFixed(2)} items/s (steady ${throughput.steadyItemsPerSec.toFixed(2)}), makespan p50 ${throughput.makespanP50Ms.toFixed(0)} ms; MiB over home links ${(big.traffic.toHome + big.traffic.fromHome).toFixed(1)}, between hosts ${big.traffic.hostToHost.toFixed(1)}`);

  log(`  ${path}: isolated, ${ISOLATED} x 1 MiB, one at a time`);
  const iso = await phase(state, () => closedLoop(ctx, triggers(trig, 'iso', ISOLATED, false), 1, `${path} isolated`, 300_000));
  const isolated = { items: ISOLATED, makespanP50Ms: median(iso.value.map((r) => r.makespanMs)), hops: hopStats(iso.value), interHopP50Ms: interHopP50(iso.value), traffic: iso.traffic };
  log(`  ${path} isolated 1 MiB: makespan p50 ${isolated.makespanP50Ms.toFixed(0)} ms, host-to-host hop p50 ${isolated.interHopP50Ms.toFixed(1)} ms`);
  return { path, deploySec: d.deploySec, throughput, isolated };
}

/**
 * Small items, one at a time, alternating between the deployments (item i of every path before
 * item i + 1 of any): a drift of the machine's load reaches every path alike.
 */
async function measureSmall(ds: Deployed[], state: TestbedState): Promise<{ byPath: Record<string, NonNullable<PathResult['small']>>; traffic: Traffic }> {
  log(`small: ${SMALL} x ${SMALL_SIZE}x${SMALL_SIZE}-pixel frames per data path, one at a time, alternating (${ds.map((d) => d.path).join(', ')})`);
  const files = new Map(ds.map((d) => [d.path, triggers(d.trig, 'small', SMALL, true)]));
  const got = new Map<string, ItemRecord[]>(ds.map((d) => [d.path, []]));
  const run = await phase(state, async () => {
    for (let i = 0; i < SMALL; i++) {
      for (const d of ds) got.get(d.path)!.push(...(await closedLoop(d.ctx, [files.get(d.path)![i]!], 1, `${d.path} small`, 60_000)));
      if ((i + 1) % 5 === 0) log(`  small: ${i + 1}/${SMALL} per path`);
    }
  });
  const byPath = Object.fromEntries(ds.map((d) => {
    const recs = got.get(d.path)!;
    const r = { items: SMALL, makespanP50Ms: median(recs.map((x) => x.makespanMs)), hops: hopStats(recs), interHopP50Ms: interHopP50(recs) };
    log(`  ${d.path} small: makespan p50 ${r.makespanP50Ms.toFixed(1)} ms, host-to-host hop p50 ${r.interHopP50Ms.toFixed(2)} ms (${Object.values(r.hops.bytes).join('/')} B)`);
    return [d.path, r];
  }));
  return { byPath, traffic: run.traffic };
}

// ---- main ---------------------------------------------------------------------------------

interface Results {
  rates?: ReturnType<typeof checkRates>;
  raw?: RawTcp;
  paths: PathResult[];
  smallTraffic?: Traffic;
  testbedUpSec?: number;
}

interface RawTcp {
  homeToNode1Mbit: number;
  node1ToNode2Mbit: number;
  chain: { items: number; seconds: number; itemsPerSec: number; steadyItemsPerSec: number };
}

async function rawTcp(state: TestbedState): Promise<RawTcp> {
  log(`raw TCP: home -> node1 (2 MiB), node1 -> node2 (${N} MiB), node1 -> node2 -> node3 (${N} x 1 MiB through a relay)`);
  const homeSec = (await tcpChain(state, [HOME, 'node1'], 2, MIB)).seconds;
  const hopSec = (await tcpChain(state, ['node1', 'node2'], N, MIB)).seconds;
  const chain = await tcpChain(state, ['node1', 'node2', 'node3'], N, MIB);
  const r = { homeToNode1Mbit: (2 * MIB * 8) / homeSec / 1e6, node1ToNode2Mbit: (N * MIB * 8) / hopSec / 1e6, chain: { items: N, seconds: chain.seconds, itemsPerSec: N / chain.seconds, steadyItemsPerSec: chain.steady } };
  log(`  home -> node1 ${r.homeToNode1Mbit.toFixed(1)} Mbit/s, node1 -> node2 ${r.node1ToNode2Mbit.toFixed(1)} Mbit/s, two-hop chain ${r.chain.itemsPerSec.toFixed(2)} items/s (steady ${r.chain.steadyItemsPerSec.toFixed(2)})`);
  return r;
}

function dataPaths(): { paths: string[]; flag: boolean } {
  const help = execFileSync(process.execPath, [cli, 'deploy', '--help']).toString();
  const flag = help.includes('--data-path');
  const wanted = (process.env.BENCH_PATHS ?? 'central,direct').split(',').map((s) => s.trim()).filter(Boolean);
  const paths = wanted.filter((p) => p === 'central' || flag);
  for (const p of wanted.filter((x) => !paths.includes(x))) log(`data path ${p}: skipped (\`jupiter deploy\` has no --data-path yet)`);
  return { paths, flag };
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('bench:dataplane needs root (namespaces, engines)');
  const { paths, flag } = dataPaths();
  const load = loadavg()[0]!;
  const work = mkdtempSync(join(tmpdir(), 'jtb-dataplane-'));
  const topo = { name: 'dataplane', home: { uplink: '10mbit' }, defaults: { uplink: '200mbit' }, hosts: HOSTS.map((name) => ({ name })) };
  writeFileSync(join(work, 'topology.json'), `${JSON.stringify(topo, null, 2)}\n`);
  const out: Results = { paths: [] };
  // BENCH_TESTBED_DIR: use a testbed that is already up (same topology; left up afterwards).
  const given = process.env.BENCH_TESTBED_DIR;
  const tbDir = given ? resolve(given) : join(work, 'tb');
  let up = false;
  try {
    if (!given) {
      log(`testbed up: home behind ${HOME_RATE / 1e6} Mbit/s, ${HOST_RATE / 1e6} Mbit/s between ${HOSTS.join(', ')}`);
      const tu = performance.now();
      up = true;
      await jupiter(work, ['testbed', 'up', 'topology.json', '--dir', tbDir]);
      out.testbedUpSec = (performance.now() - tu) / 1000;
      log(`  up in ${out.testbedUpSec.toFixed(0)} s`);
    }
    const state = JSON.parse(readFileSync(join(tbDir, 'testbed.json'), 'utf8')) as TestbedState;
    out.rates = checkRates(state);
    log(`  htb classes: home <-> hosts ${HOME_RATE / 1e6} Mbit/s, hosts <-> hosts ${HOST_RATE / 1e6} Mbit/s (12 directed pairs checked)`);
    // Once per testbed (a reused one may have the rules already).
    if (!(`${HOSTS[0]}>${HOSTS[1]}` in pairCounters(state).all)) countAgentTraffic(state);
    const redis = connectRedis(state.redis!.url);
    const deployed: Deployed[] = [];
    try {
      for (const p of paths) deployed.push(await deployPath(p, flag, state, work, redis));
      // The raw TCP chain right before the last path's 1 MiB run: the same moment's machine.
      for (const [i, d] of deployed.entries()) {
        if (i === deployed.length - 1) out.raw = await rawTcp(state);
        out.paths.push(await measureBig(d, state));
        save(out, load);
      }
      const small = await measureSmall(deployed, state);
      for (const r of out.paths) r.small = small.byPath[r.path];
      out.smallTraffic = small.traffic;
      save(out, load);
    } finally {
      redis.disconnect();
      for (const d of deployed) {
        await jupiter(work, ['teardown', d.ctx.app.name], { JUPITER_CONFIG: state.configFile }).catch((e: Error) => log(`  teardown ${d.ctx.app.name} failed: ${e.message.split('\n')[0]}`));
      }
    }
  } finally {
    if (up) {
      log('testbed down');
      await jupiter(work, ['testbed', 'down', '--dir', tbDir]).catch((e: Error) => log(`testbed down failed: ${e.message}; run \`jupiter testbed down --dir ${tbDir}\``));
    }
    rmSync(work, { recursive: true, force: true });
  }
  report(out);
  log(`results: ${save(out, load)}`);
}

function report(out: Results): void {
  const c = out.paths.find((p) => p.path === 'central');
  const d = out.paths.find((p) => p.path === 'direct');
  const raw = out.raw!;
  const cs = c?.small;
  const dsm = d?.small;
  const f = (v: number | undefined, digits = 2) => (v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits));
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? '-' : `${(a / b).toFixed(2)}x`);
  const rows: Array<Array<string | number>> = [
    [`1 MiB items/s steady (after the first item; ${NC} / ${N} / ${N} items, ${WINDOW} in flight)`, f(c?.throughput.steadyItemsPerSec), f(d?.throughput.steadyItemsPerSec), f(raw.chain.steadyItemsPerSec), ratio(d?.throughput.steadyItemsPerSec, c?.throughput.steadyItemsPerSec), ratio(d?.throughput.steadyItemsPerSec, raw.chain.steadyItemsPerSec), '>= 10x, >= 0.7x'],
    ['1 MiB items/s, whole run (with the fill)', f(c?.throughput.itemsPerSec), f(d?.throughput.itemsPerSec), f(raw.chain.itemsPerSec), ratio(d?.throughput.itemsPerSec, c?.throughput.itemsPerSec), ratio(d?.throughput.itemsPerSec, raw.chain.itemsPerSec), ''],
    ['1 MiB makespan p50 under load (ms)', f(c?.throughput.makespanP50Ms, 0), f(d?.throughput.makespanP50Ms, 0), '', ratio(d?.throughput.makespanP50Ms, c?.throughput.makespanP50Ms), '', ''],
    ['1 MiB makespan p50 isolated (ms)', f(c?.isolated.makespanP50Ms, 0), f(d?.isolated.makespanP50Ms, 0), '', ratio(d?.isolated.makespanP50Ms, c?.isolated.makespanP50Ms), '', ''],
    ['1 MiB host-to-host hop p50 isolated (ms)', f(c?.isolated.interHopP50Ms, 1), f(d?.isolated.interHopP50Ms, 1), '', ratio(d?.isolated.interHopP50Ms, c?.isolated.interHopP50Ms), '', ''],
    [`small (${SMALL_SIZE}x${SMALL_SIZE} px) host-to-host hop p50 (ms)`, f(cs?.interHopP50Ms), f(dsm?.interHopP50Ms), '', dsm && cs ? `${dsm.interHopP50Ms - cs.interHopP50Ms >= 0 ? '+' : ''}${(dsm.interHopP50Ms - cs.interHopP50Ms).toFixed(2)} ms` : '-', '', '<= +0.5 ms'],
    ['small makespan p50 (ms)', f(cs?.makespanP50Ms, 1), f(dsm?.makespanP50Ms, 1), '', ratio(dsm?.makespanP50Ms, cs?.makespanP50Ms), '', ''],
    ['MiB over home links, 1 MiB run (to / from home)', c ? `${f(c.throughput.traffic.toHome, 1)} / ${f(c.throughput.traffic.fromHome, 1)}` : '-', d ? `${f(d.throughput.traffic.toHome, 1)} / ${f(d.throughput.traffic.fromHome, 1)}` : '-', '0', '', '', ''],
    ['MiB between hosts, 1 MiB run', f(c?.throughput.traffic.hostToHost, 1), f(d?.throughput.traffic.hostToHost, 1), `${f(2 * N, 0)} of frames`, '', '', ''],
  ];
  process.stdout.write(`${renderTable(['', 'central', 'direct', 'raw TCP', 'direct/central', 'direct/raw', 'target'], rows)}\n`);
  process.stdout.write(`raw TCP: home -> node1 ${raw.homeToNode1Mbit.toFixed(1)} Mbit/s, node1 -> node2 ${raw.node1ToNode2Mbit.toFixed(1)} Mbit/s; two-hop chain node1 -> node2 -> node3 ${raw.chain.itemsPerSec.toFixed(2)} items/s (steady ${raw.chain.steadyItemsPerSec.toFixed(2)})\n`);
  for (const p of out.paths) {
    const h = (s: HopStats) => HOPS.map((x) => `${x} ${s.p50Ms[x]!.toFixed(1)}`).join(', ');
    process.stdout.write(`${p.path}: per-hop p50 ms, 1 MiB isolated: ${h(p.isolated.hops)}${p.small ? `; small: ${h(p.small.hops)} (bytes per hop ${Object.values(p.small.hops.bytes).join('/')})` : ''}\n`);
    const cpu = p.throughput.traffic.cpuSec;
    process.stdout.write(`  CPU during the 1 MiB run (${p.throughput.traffic.seconds.toFixed(1)} s, load ${p.throughput.traffic.load1.toFixed(1)} at its end): ${Object.entries(cpu).map(([k, v]) => `${k} ${v.toFixed(1)} s`).join(', ')}; ${(Object.values(cpu).reduce((a, v) => a + v, 0) / p.throughput.items * 1000).toFixed(0)} ms per item; held back by the containers' CPU quota: ${Object.entries(p.throughput.traffic.throttledMs ?? {}).map(([k, v]) => `${k} ${v} ms`).join(', ')}\n`);
    const parts = (s: HopStats) => Object.entries(s.partsP50Ms).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ');
    process.stdout.write(`  p50 ms, 1 MiB under load: ${parts(p.throughput.hops)}\n  isolated: ${parts(p.isolated.hops)}\n`);
  }
  process.stdout.write(`bytes: htb class counters of each host's veth, less what the agents' probes sent between hosts (iptables counters on the agent port: ${out.paths.map((p) => `${p.path} ${p.throughput.traffic.agentsHostToHost.toFixed(1)} MiB`).join(', ')}); ${out.paths.map((p) => `${p.path} ${p.throughput.items} items x 2 hops x 1 MiB = ${2 * p.throughput.items} MiB of frames`).join(', ')}\n`);
}

function save(out: object, load: number): string {
  const file = process.env.BENCH_RESULTS ?? join(repo, 'bench', 'results', 'dataplane.json');
  writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), cpus: cpus().length, load1AtStart: load, items: N, centralItems: NC, window: WINDOW, homeRateMbit: HOME_RATE / 1e6, hostRateMbit: HOST_RATE / 1e6, placement: PIN, tasks: TASKS, ...out }, null, 2)}\n`);
  return file;
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
