// The ONE place that turns an app plus profiles into a Problem (see mappers/README.md).
//
// - Tasks: the app's DAG tasks. Non-DAG helper tasks are not part of the Problem; they are placed
//   round-robin over the nodes by placeHelperTasks().
// - Edge volume: a task's profiled output bytes, averaged over the nodes it was profiled on
//   (home included). FLAG true (broadcast): every child gets all of it. FLAG false: the i-th
//   output goes to the i-th child, so each child gets output / (number of listed children,
//   `home` included). A task without any output profile sends 0 bytes (transfer = link latency).
// - Execution time of a profiled task on a node: the mean of its records there; nodes alike (one
//   machine, the same CPU limit) get the median of the group's (pooledExecProfiles); missing on a
//   node: the mean over the nodes where it was profiled; never profiled: defaultExecSec (1 ms).
// - exec_profiler=false tasks (the original's "super tasks", which HEFT fed the home's numbers on
//   every node): the same time on every node = the mean of whatever records exist for them
//   (usually the home's), else defaultExecSec. They then cost the same everywhere and only
//   transfers decide their placement.
// - Static placement lines of the app pin a task: its execution time is kept on that node only.
// - Links: quadratic (a, b, c) of the profile when any coefficient is non-zero, else its
//   latency + bandwidth; a pair without a profile uses the reverse direction's, else defaultLink
//   (1 ms + 1 Gbit/s).
// - Resources: cpuMean/memMean (running means, as the original used), else cpuPercent/memPercent.
// - Measured control costs (profiles.overheads): a node's invokeSec becomes its
//   invokeOverheadSec, its hopSec its hopOverheadSec, its localHopSecPerByte (a same-node hop's
//   cost per byte) the problem's localHopSecPerByte; on a machine more nodes share than it has
//   cores, the invocation costs up to the node's taskCpuSec (a no-op task's CPU through the real
//   runner): the share of the app's widest level (dag-width.ts) the cores cannot hold queues.
//   Nodes on one machine get the median of its nodes' costs (pooledByMachine). A node with a CPU
//   limit below 1 pays taskCpuSec beyond its invocation from its quota (runnerCpuSec), and its
//   runnerCpuSecPerByte for the bytes a task moves (runnerCpuSecPerByte).
// - Hosts: a node's resources name its machine (`host`) and cores; nodes on one machine share
//   them (Problem.hostCores). A node's own CPU limit (`cpuLimit`: declared, else its cgroup's)
//   becomes its `cpus` (mappers/cpu-quota.ts).
// - Home hops, when the profile measured any home link or overhead: the entry tasks receive
//   `sourceBytes` from the home, the tasks listing `home` as a child send it their share of their
//   output; over the profiled home <-> node links (missing: defaultLink).
import { widestLevel } from './dag-width.js';
import type { AppSpec, ExecProfile, LinkProfile, Mapping, NodeOverhead, NodeResources, ProfileSnapshot } from '../config/types.js';
import { HOME } from '../config/types.js';
import type { LinkModel, Problem, ProblemLink } from './problem.js';
import { validateProblem } from './problem.js';

export interface FromProfilesOptions {
  /** Compute nodes to map onto (default: every node in profiles.nodes except `home`). */
  nodes?: string[];
  /** Execution time of a task that was never profiled (default 0.001 s). */
  defaultExecSec?: number;
  /** Link model of a pair without a profile in either direction (default 1 ms + 125e6 bytes/s). */
  defaultLink?: LinkModel;
  /** Bytes the home sends each entry task per item (the source hop; default 1 KiB). */
  sourceBytes?: number;
  /**
   * Pool the execution profiles of alike nodes on one machine (pooledExecProfiles; default true).
   * Off for a snapshot whose exec entries carry runtime observations of each node (adapt/plan.ts
   * pools the profiles before it blends them in).
   */
  poolExec?: boolean;
}

export const DEFAULT_EXEC_SEC = 0.001;
export const DEFAULT_LINK: LinkModel = { latencySec: 0.001, bandwidthBytesPerSec: 125e6 };
export const DEFAULT_SOURCE_BYTES = 1024;

function modelOf(l: LinkProfile | undefined, fallback: LinkModel): LinkModel {
  if (l && (l.a !== 0 || l.b !== 0 || l.c !== 0)) return { a: l.a, b: l.b, c: l.c };
  if (l && l.bandwidthBytesPerSec > 0) return { latencySec: Math.max(0, l.latencySec), bandwidthBytesPerSec: l.bandwidthBytesPerSec };
  return fallback;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

export function problemFromProfiles(app: AppSpec, profiles: ProfileSnapshot, opts: FromProfilesOptions = {}): Problem {
  const nodes = opts.nodes ?? [...new Set(profiles.nodes.map((n) => n.node))].filter((n) => n !== HOME);
  const defaultExec = opts.defaultExecSec ?? DEFAULT_EXEC_SEC;
  const specs = new Map(app.tasks.map((t) => [t.name, t]));
  const dag = new Set(app.dagTasks);

  const byTask = new Map<string, typeof profiles.exec>();
  const execProfiles = opts.poolExec === false ? profiles.exec : pooledExecProfiles(app.name, profiles, nodes).exec;
  for (const e of execProfiles) {
    if (e.app !== app.name && e.app !== '') continue;
    const list = byTask.get(e.task) ?? [];
    list.push(e);
    byTask.set(e.task, list);
  }

  const exec: Problem['exec'] = {};
  for (const t of app.dagTasks) {
    const recs = byTask.get(t) ?? [];
    const row: Record<string, number> = {};
    const profiled = specs.get(t)?.execProfiler !== false;
    const onNodes = recs.filter((r) => nodes.includes(r.node));
    const fallback = profiled && onNodes.length ? mean(onNodes.map((r) => r.durationSec)) : recs.length ? mean(recs.map((r) => r.durationSec)) : defaultExec;
    for (const n of nodes) {
      const here = profiled ? onNodes.filter((r) => r.node === n) : [];
      row[n] = here.length ? mean(here.map((r) => r.durationSec)) : fallback;
    }
    const pin = app.staticPlacement[t];
    exec[t] = pin !== undefined && row[pin] !== undefined ? { [pin]: row[pin] } : row;
  }

  const edges: Problem['edges'] = [];
  const sinks: Array<{ task: string; bytes: number }> = [];
  const hasParent = new Set<string>();
  for (const t of app.dagTasks) {
    const spec = specs.get(t);
    if (!spec) continue;
    const recs = byTask.get(t) ?? [];
    const out = recs.length ? mean(recs.map((r) => r.outputBytes)) : 0;
    const share = spec.broadcast || spec.children.length === 0 ? out : out / spec.children.length;
    const toHome = spec.children.filter((c) => c === HOME).length;
    if (toHome) sinks.push({ task: t, bytes: spec.broadcast ? out : share * toHome });
    for (const c of new Set(spec.children)) {
      if (c !== t && dag.has(c)) hasParent.add(c);
      if (c === HOME || c === t || !dag.has(c)) continue;
      // A child listed k times under FLAG false receives k shares.
      const k = spec.broadcast ? 1 : spec.children.filter((x) => x === c).length;
      edges.push({ from: t, to: c, bytes: share * k });
    }
  }

  const prof = new Map([...profiles.links, ...(profiles.homeLinks ?? [])].map((l) => [`${l.from}\u0000${l.to}`, l]));
  const defaultLink = opts.defaultLink ?? DEFAULT_LINK;
  const links: ProblemLink[] = [];
  for (const a of nodes) {
    for (const b of nodes) {
      if (a === b) continue;
      links.push({ from: a, to: b, model: modelOf(prof.get(`${a}\u0000${b}`) ?? prof.get(`${b}\u0000${a}`), defaultLink) });
    }
  }

  const res = new Map(profiles.nodes.map((n) => [n.node, n]));
  const problem: Problem = {
    tasks: app.dagTasks.slice(),
    edges,
    nodes: nodes.map((name) => {
      const r = res.get(name);
      const node: Problem['nodes'][number] = { name };
      const cpu = r ? (Number.isFinite(r.cpuMean) ? r.cpuMean : r.cpuPercent) : undefined;
      const mem = r ? (Number.isFinite(r.memMean) ? r.memMean : r.memPercent) : undefined;
      if (cpu !== undefined && Number.isFinite(cpu) && cpu >= 0) node.cpuPercent = cpu;
      if (mem !== undefined && Number.isFinite(mem) && mem >= 0) node.memPercent = mem;
      if (r?.host) node.host = r.host;
      if (r?.cpuLimit !== undefined && Number.isFinite(r.cpuLimit) && r.cpuLimit > 0) node.cpus = r.cpuLimit;
      return node;
    }),
    exec,
    links,
  };
  // Nodes on one machine share its cores (the embedded default's logical nodes).
  const cores: Record<string, number> = {};
  for (const name of nodes) {
    const r = res.get(name);
    if (r?.host && Number.isFinite(r.cores) && r.cores >= 1) cores[r.host] = Math.floor(r.cores);
  }
  if (Object.keys(cores).length) problem.hostCores = cores;
  const nodesOn = new Map<string, number>();
  for (const n of problem.nodes) if (n.host) nodesOn.set(n.host, (nodesOn.get(n.host) ?? 0) + 1);
  const contended = (node: string): boolean => {
    const h = problem.nodes.find((n) => n.name === node)?.host;
    return h !== undefined && cores[h] !== undefined && (nodesOn.get(h) ?? 0) > (cores[h] as number);
  };
  const overheads = pooledByMachine((profiles.overheads ?? []).filter((o) => nodes.includes(o.node)), (n) => res.get(n)?.host);
  if (overheads.length) {
    // Where more nodes than cores share a machine, tasks may queue for its cores, and a task that
    // waits for one costs what it takes of them: its CPU through the real runner. One that finds a
    // core free waits for the idle round trips of the empty call. The share that queues is judged
    // from the app's widest level against the machine's cores: none when it fits (camera's chain),
    // a third for dummy's 3 at once on 2 cores, nearly all for a generated 52 at once on 2. The
    // edge-fog-cloud testbed's 7 hosts on 2 cores with every task's CPU over-predicted all of dummy
    // and camera (0.53-0.74x measured); with none, generated DAGs of 60-150 tasks were 14-19x.
    const width = widestLevel(problem.tasks, edges);
    const queued = (node: string): number => {
      const h = problem.nodes.find((n) => n.name === node)?.host;
      return contended(node) && h !== undefined ? Math.max(0, 1 - (cores[h] as number) / Math.max(1, width)) : 0;
    };
    problem.invokeOverheadSec = Object.fromEntries(overheads.map((o) => {
      const idle = Math.max(0, o.invokeSec);
      return [o.node, idle + queued(o.node) * Math.max(0, (o.taskCpuSec ?? 0) - idle)];
    }));
    problem.hopOverheadSec = Object.fromEntries(overheads.map((o) => [o.node, Math.max(0, o.hopSec)]));
    // A hop between two tasks on one node also pays for its bytes (the store and the receiver's
    // copy, direct path): camera's 1 MiB frames took 4-9 ms more there than the empty hop.
    const local = overheads.filter((o) => o.localHopSecPerByte !== undefined && Number.isFinite(o.localHopSecPerByte));
    if (local.length) problem.localHopSecPerByte = Object.fromEntries(local.map((o) => [o.node, Math.max(0, o.localHopSecPerByte as number)]));
    // A node with a CPU quota also pays the runner's CPU per task from it (cpu-quota.ts): what a
    // no-op task costs through the runner beyond the invocation already charged as time.
    const limited = overheads.filter((o) => o.taskCpuSec !== undefined && (problem.nodes.find((n) => n.name === o.node)?.cpus ?? Infinity) < 1);
    if (limited.length) {
      problem.runnerCpuSec = Object.fromEntries(limited.map((o) => [o.node, Math.max(0, (o.taskCpuSec as number) - (problem.invokeOverheadSec?.[o.node] ?? 0))]));
      // And per byte a task moves: the task probe's items are tiny.
      const perByte = limited.filter((o) => o.runnerCpuSecPerByte !== undefined && Number.isFinite(o.runnerCpuSecPerByte));
      if (perByte.length) problem.runnerCpuSecPerByte = Object.fromEntries(perByte.map((o) => [o.node, Math.max(0, o.runnerCpuSecPerByte as number)]));
    }
  }
  const homeLinks = nodes.filter((n) => prof.has(`${HOME}\u0000${n}`) || prof.has(`${n}\u0000${HOME}`));
  if (homeLinks.length || overheads.length) {
    const sourceBytes = opts.sourceBytes ?? DEFAULT_SOURCE_BYTES;
    problem.home = {
      sources: app.dagTasks.filter((t) => !hasParent.has(t)).map((task) => ({ task, bytes: sourceBytes })),
      sinks,
      links: homeLinks.map((node) => {
        const down = prof.get(`${HOME}\u0000${node}`);
        const up = prof.get(`${node}\u0000${HOME}`);
        return { node, toNode: modelOf(down ?? up, defaultLink), toHome: modelOf(up ?? down, defaultLink) };
      }),
    };
  }
  const entryNodes: Record<string, string> = {};
  for (const [t, n] of Object.entries(app.inputNode)) if (dag.has(t) && nodes.includes(n)) entryNodes[t] = n;
  if (Object.keys(entryNodes).length) problem.entryNodes = entryNodes;
  return validateProblem(problem);
}

const median = (xs: number[]): number => {
  const v = xs.slice().sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length % 2 ? (v[m] as number) : ((v[m - 1] as number) + (v[m] as number)) / 2;
};

/**
 * Which nodes are alike: one machine (`host`) and the same CPU limit (none, or equal to 0.01 core).
 * Undefined for a node whose machine is unknown: it is alike to none.
 */
export function alikeKey(resources: (node: string) => Pick<NodeResources, 'host' | 'cpuLimit'> | undefined): (node: string) => string | undefined {
  return (node) => {
    const r = resources(node);
    if (!r?.host) return undefined;
    const limit = r.cpuLimit !== undefined && Number.isFinite(r.cpuLimit) && r.cpuLimit > 0 ? r.cpuLimit.toFixed(2) : 'none';
    return `${r.host}\u0000${limit}`;
  };
}

/**
 * How far (a factor either way) a node's profile may be from its group's median and still be
 * pooled: the noise of one-shot profiles on one machine spread 3.7x (camera's detect 6.7-25 ms
 * across the testbed's hosts, median ~15); a node 10x slower than its group is a real difference.
 */
const POOL_SPREAD = 3;

/**
 * The snapshot with the app's execution profiles on alike nodes pooled: every record of a task on
 * a node of a group of alike nodes (alikeKey) among `nodes` gets the median of the group's
 * per-node means, unless it is more than POOL_SPREAD times off it. A profile is the fastest of a
 * few calls on one node, and on one machine the nodes' profiles of one task spread with what else
 * ran at that moment: camera's detect 6.7-25 ms across the testbed's seven hosts, and the mappers
 * put it on the host whose calls came out fastest, where it then ran 28 ms like anywhere else.
 * Smaller real differences between nodes of one machine (a CPU hog, a busier neighbour) are what
 * runtime observations show: a re-map pools the profiles before it blends those in
 * (adapt/plan.ts). Nodes alike to none keep their own.
 */
export function pooledExecProfiles(app: string, profiles: ProfileSnapshot, nodes: string[]): ProfileSnapshot {
  const res = new Map(profiles.nodes.map((n) => [n.node, n]));
  const alike = alikeKey((n) => res.get(n));
  const keyOf = new Map(nodes.map((n) => [n, alike(n)]));
  // The group of a record of this app on one of `nodes`, if its node is alike to any.
  const group = (e: ExecProfile): string | undefined => (e.app === app || e.app === '' ? keyOf.get(e.node) : undefined);
  // task -> group -> node -> durations
  const groups = new Map<string, Map<string, Map<string, number[]>>>();
  for (const e of profiles.exec) {
    const g = group(e);
    if (g === undefined) continue;
    const byGroup = groups.get(e.task) ?? new Map<string, Map<string, number[]>>();
    const byNode = byGroup.get(g) ?? new Map<string, number[]>();
    byNode.set(e.node, [...(byNode.get(e.node) ?? []), e.durationSec]);
    byGroup.set(g, byNode);
    groups.set(e.task, byGroup);
  }
  const exec = profiles.exec.map((e) => {
    const g = group(e);
    const byNode = g === undefined ? undefined : groups.get(e.task)?.get(g);
    if (!byNode || byNode.size < 2) return e;
    const m = median([...byNode.values()].map(mean));
    const own = mean(byNode.get(e.node)!);
    return own <= POOL_SPREAD * m && own * POOL_SPREAD >= m ? { ...e, durationSec: m } : e;
  });
  return { ...profiles, exec };
}

/**
 * Nodes on one machine share its kernel, its cores and its way to Redis: their control costs are
 * one quantity, probed once per node. Those probes spread 2-25 ms between the testbed's seven hosts
 * (one machine) and from run to run for one node, and the mappers put most tasks on whichever
 * looked cheapest (its hops then took 10-25 ms like the others'); so each node of a machine gets
 * the median of the machine's nodes. Nodes alone on their machine keep their own.
 */
export function pooledByMachine(overheads: NodeOverhead[], hostOf: (node: string) => string | undefined): NodeOverhead[] {
  const byHost = new Map<string, NodeOverhead[]>();
  for (const o of overheads) {
    const h = hostOf(o.node);
    if (h !== undefined) byHost.set(h, [...(byHost.get(h) ?? []), o]);
  }
  return overheads.map((o) => {
    const h = hostOf(o.node);
    const mates = h === undefined ? [] : (byHost.get(h) ?? []);
    if (mates.length < 2) return o;
    const cpu = mates.map((m) => m.taskCpuSec).filter((x): x is number => x !== undefined);
    const local = mates.map((m) => m.localHopSecPerByte).filter((x): x is number => x !== undefined);
    const perByte = mates.map((m) => m.runnerCpuSecPerByte).filter((x): x is number => x !== undefined);
    return {
      ...o,
      hopSec: median(mates.map((m) => m.hopSec)),
      invokeSec: median(mates.map((m) => m.invokeSec)),
      ...(o.taskCpuSec !== undefined && cpu.length ? { taskCpuSec: median(cpu) } : {}),
      ...(local.length ? { localHopSecPerByte: median(local) } : {}),
      ...(perByte.length ? { runnerCpuSecPerByte: median(perByte) } : {}),
    };
  });
}

/** Non-DAG helper tasks, round-robin over the nodes in configuration.txt order (deterministic). */
export function placeHelperTasks(app: AppSpec, nodes: string[]): Mapping {
  const out: Mapping = {};
  let i = 0;
  for (const t of app.tasks) {
    if (t.isDag || nodes.length === 0) continue;
    out[t.name] = nodes[i++ % nodes.length] as string;
  }
  return out;
}
