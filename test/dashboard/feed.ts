// What a deployed app writes to Redis, written by hand for telemetry tests: the mapping record,
// agents' resource reports and link fits, and a realistic stream of task events (items flowing
// through a DAG, with a retried and a given-up item), with the tallies the tests compare against.
import type { Redis } from 'ioredis';
import { redisKeys } from '../../config/redis-keys.js';
import type { AppEvent, MappingRecord, TaskEvent } from '../../config/events.js';
import type { LinkProfile, NodeResources } from '../../config/types.js';

export interface DagTask {
  name: string;
  children: string[];
  sink?: boolean;
}

/** A 7-task app on 3 nodes: a fork, two branches, a join, a sink. */
export const SEVEN: { app: string; tasks: DagTask[]; mapping: Record<string, string> } = {
  app: 'camera',
  tasks: [
    { name: 'ingest', children: ['decode', 'detect'] },
    { name: 'decode', children: ['resize'] },
    { name: 'detect', children: ['classify'] },
    { name: 'resize', children: ['merge'] },
    { name: 'classify', children: ['merge'] },
    { name: 'merge', children: ['store'] },
    { name: 'store', children: [], sink: true },
  ],
  mapping: { ingest: 'node1', decode: 'node2', detect: 'node3', resize: 'node2', classify: 'node3', merge: 'node1', store: 'node1' },
};

/** A random layered DAG of n tasks mapped round-robin-ish on `nodes` nodes. */
export function bigDag(n: number, nodes: number, seed = 7): { app: string; tasks: DagTask[]; mapping: Record<string, string> } {
  let s = seed;
  const rnd = (): number => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const width = Math.ceil(Math.sqrt(n) * 1.2);
  const names = Array.from({ length: n }, (_, i) => `t${String(i).padStart(3, '0')}`);
  const tasks: DagTask[] = names.map((name) => ({ name, children: [] }));
  for (let i = width; i < n; i++) {
    // each task below the first layer gets 1-2 parents among the previous `width*2` tasks
    const lo = Math.max(0, i - 2 * width);
    const hi = i - 1;
    const k = 1 + Math.floor(rnd() * 2);
    for (let j = 0; j < k; j++) {
      const p = lo + Math.floor(rnd() * (hi - lo + 1));
      if (!tasks[p]!.children.includes(names[i]!)) tasks[p]!.children.push(names[i]!);
    }
  }
  for (const t of tasks) if (t.children.length === 0) t.sink = true;
  const mapping = Object.fromEntries(names.map((name, i) => [name, `node${1 + ((i * 7 + Math.floor(i / 3)) % nodes)}`]));
  return { app: 'big', tasks, mapping };
}

function topo(tasks: DagTask[]): string[] {
  const indeg = new Map(tasks.map((t) => [t.name, 0]));
  for (const t of tasks) for (const c of t.children) indeg.set(c, (indeg.get(c) ?? 0) + 1);
  const q = tasks.filter((t) => indeg.get(t.name) === 0).map((t) => t.name);
  const byName = new Map(tasks.map((t) => [t.name, t]));
  for (let i = 0; i < q.length; i++) {
    for (const c of byName.get(q[i]!)!.children) {
      indeg.set(c, indeg.get(c)! - 1);
      if (indeg.get(c) === 0) q.push(c);
    }
  }
  return q;
}

export function mappingRecord(dag: { app: string; tasks: DagTask[]; mapping: Record<string, string> }, mapper = 'heft'): MappingRecord {
  // A plausible predicted schedule: each task starts when its parents and its node are free.
  const order = topo(dag.tasks);
  const parents = new Map<string, string[]>(dag.tasks.map((t) => [t.name, []]));
  for (const t of dag.tasks) for (const c of t.children) parents.get(c)!.push(t.name);
  const finish = new Map<string, number>();
  const nodeFree = new Map<string, number>();
  const schedule = order.map((task, i) => {
    const node = dag.mapping[task]!;
    const ready = Math.max(0, ...parents.get(task)!.map((p) => finish.get(p)! + (dag.mapping[p] === node ? 0 : 0.04)));
    const start = Math.max(ready, nodeFree.get(node) ?? 0);
    const end = start + 0.08 + ((i * 37) % 11) / 100;
    finish.set(task, end);
    nodeFree.set(node, end);
    return { task, node, start: +start.toFixed(3), finish: +end.toFixed(3) };
  });
  return {
    app: dag.app,
    mapper,
    mapping: dag.mapping,
    schedule,
    predictedMakespan: Math.max(...schedule.map((s) => s.finish)),
    ts: Date.now(),
    dag: { tasks: dag.tasks },
  };
}

export async function writeDeployment(redis: Redis, prefix: string, rec: MappingRecord): Promise<void> {
  const k = redisKeys(prefix);
  await redis.set(k.mapping(rec.app), JSON.stringify(rec));
  await redis.sadd(k.apps(), rec.app);
}

export async function writeNodes(redis: Redis, prefix: string, nodes: string[], cpu = (i: number) => 20 + 25 * i): Promise<NodeResources[]> {
  const k = redisKeys(prefix);
  const out: NodeResources[] = [];
  for (const [i, node] of nodes.entries()) {
    const r: NodeResources = {
      node, cpuPercent: cpu(i), cpuMean: cpu(i), memPercent: 30 + 15 * i, memMean: 30 + 15 * i,
      cores: 4, load1: 0.5 + i, freeMemBytes: (8 - 2 * i) * 2 ** 30, updatedAt: Date.now(),
    };
    await redis.hset(k.resources(node), 'json', JSON.stringify(r));
    await redis.hset(k.node(node), 'host', '127.0.0.1', 'port', String(7000 + i), 'pid', '1', 'startedAt', String(Date.now()));
    await redis.expire(k.node(node), 30);
    await redis.sadd(k.nodes(), node);
    out.push(r);
  }
  return out;
}

export async function writeLinks(redis: Redis, prefix: string, nodes: string[]): Promise<LinkProfile[]> {
  const k = redisKeys(prefix);
  const out: LinkProfile[] = [];
  for (const [i, from] of nodes.entries()) {
    for (const [j, to] of nodes.entries()) {
      if (from === to) continue;
      const bw = (10 + i * 5 + j) * 1e6;
      const l: LinkProfile = { from, to, a: 0, b: 1 / bw, c: 0.001, latencySec: 0.001, bandwidthBytesPerSec: bw, samples: 10, updatedAt: Date.now() };
      await redis.set(k.linkFit(from, to), JSON.stringify(l));
      out.push(l);
    }
  }
  return out;
}

export interface Tally {
  processed: Record<string, number>;
  failed: Record<string, number>;
  failedAttempts: Record<string, number>;
  itemsDone: number;
  events: number;
}

export function emptyTally(tasks: DagTask[]): Tally {
  const zero = (): Record<string, number> => Object.fromEntries(tasks.map((t) => [t.name, 0]));
  return { processed: zero(), failed: zero(), failedAttempts: zero(), itemsDone: 0, events: 0 };
}

export async function xaddEvents(redis: Redis, prefix: string, app: string, events: AppEvent[]): Promise<void> {
  const key = redisKeys(prefix).events(app);
  const pipe = redis.pipeline();
  for (const ev of events) pipe.xadd(key, 'MAXLEN', '~', 100_000, '*', 'json', JSON.stringify(ev));
  await pipe.exec();
}

export interface ItemPlan {
  /** Task at which the item fails for good (no item-done). */
  failAt?: string;
  /** Task at which the first attempt fails and is retried. */
  retryAt?: string;
}

/** The events of one item flowing through the whole DAG, in causal order. */
export function itemEvents(dag: { app: string; tasks: DagTask[]; mapping: Record<string, string> }, item: string, t0: number, plan: ItemPlan, tally: Tally): AppEvent[] {
  const evs: AppEvent[] = [];
  let t = t0;
  const ev = (type: TaskEvent['type'], task: string, extra: Partial<TaskEvent> = {}): void => {
    evs.push({ type, app: dag.app, task, node: dag.mapping[task]!, item, ts: t, ...extra });
  };
  for (const task of topo(dag.tasks)) {
    ev('enter', task);
    t += 2;
    ev('start', task);
    if (plan.retryAt === task) {
      t += 5;
      ev('fail', task, { error: 'transient: connection reset', attempt: 1, final: false });
      tally.failedAttempts[task]! += 1;
      t += 3;
      ev('start', task);
    }
    const d = 20 + ((item.length * 13 + task.length * 7) % 30);
    t += d;
    if (plan.failAt === task) {
      ev('fail', task, { error: 'ValueError: corrupt frame', attempt: 3, final: true });
      tally.failed[task]! += 1;
      tally.failedAttempts[task]! += 1;
      tally.events += evs.length;
      return evs;
    }
    ev('finish', task, { durationMs: d });
    tally.processed[task]! += 1;
    t += 1;
  }
  evs.push({ type: 'item-done', app: dag.app, item, makespanMs: t - t0, outputs: [`${item}.out`], ts: t });
  tally.itemsDone += 1;
  tally.events += evs.length;
  return evs;
}
