// The scheduling problem every mapper solves, in Jupiter units (seconds, bytes).
// The JSON form is documented in mappers/README.md and checked by the ajv schema below plus
// the cross-reference checks ajv cannot express (names, duplicates, cycles, missing links).
import type { ErrorObject, ValidateFunction } from 'ajv';
import { inputError } from '../config/errors.js';
import { ajvClass } from '../config/schemas/ajv.js';

/**
 * Transfer seconds = a*bytes^2 + b*bytes + c (DRUPE's quadratic, already in seconds and bytes).
 * Fitted coefficients may be negative; a negative prediction is clamped to 0.
 */
export interface QuadraticLink {
  a: number;
  b: number;
  c: number;
}

/** Transfer seconds = latencySec + bytes / bandwidthBytesPerSec. */
export interface LatencyBandwidthLink {
  latencySec: number;
  bandwidthBytesPerSec: number;
}

export type LinkModel = QuadraticLink | LatencyBandwidthLink;

export interface ProblemLink {
  from: string;
  to: string;
  model: LinkModel;
}

export interface ProblemNode {
  name: string;
  /** Running-mean CPU use in percent (WAVE greedy); missing counts as "very busy". */
  cpuPercent?: number;
  /** Running-mean memory use in percent (WAVE greedy); missing counts as "very busy". */
  memPercent?: number;
  /**
   * The machine this node runs on. Nodes naming the same host share its `hostCores`: at most that
   * many of their tasks run at once (the embedded default's logical nodes all share one machine).
   */
  host?: string;
  /**
   * The node's own CPU capacity in cores, may be fractional (a CFS quota: the testbed's 0.5-CPU edge
   * hosts). Below 1, its tasks share that much CPU: one alone runs at its execution time while the
   * quota lasts, tasks of one item that want more are stretched (mappers/cpu-quota.ts). Missing or
   * >= 1: not limited beyond running one task at a time.
   */
  cpus?: number;
}

export interface ProblemEdge {
  from: string;
  to: string;
  /** Data volume sent from `from` to `to` per item. */
  bytes: number;
}

/** A link between the home and one node, each direction on its own. */
export interface ProblemHomeLink {
  node: string;
  /** home -> node: the source hop's bytes. */
  toNode: LinkModel;
  /** node -> home: the sink hop's bytes. */
  toHome: LinkModel;
}

/**
 * The hops that cross the home's links: per item the home sends `bytes` to each source task
 * (entry tasks) and each sink task sends `bytes` home. The predicted makespan then runs from the
 * item leaving the home to its last output arriving there.
 */
export interface ProblemHome {
  sources: Array<{ task: string; bytes: number }>;
  sinks: Array<{ task: string; bytes: number }>;
  /** home <-> node links; a node not listed uses `defaultLink` (0 s without one). */
  links?: ProblemHomeLink[];
}

export interface Problem {
  /** Task names; order is the tie-breaking order of every mapper. */
  tasks: string[];
  edges: ProblemEdge[];
  nodes: ProblemNode[];
  /** exec[task][node] = seconds; a missing node means the task cannot run there. */
  exec: Record<string, Record<string, number>>;
  /** Link model per ordered node pair (from != to); same-node transfer: `hopOverheadSec` and `localHopSecPerByte`, else 0. */
  links: ProblemLink[];
  /** Used for ordered pairs without an entry in `links`; without it every pair must be listed. */
  defaultLink?: LinkModel;
  /** WAVE: node that receives an entry task first (input_node.txt). */
  entryNodes?: Record<string, string>;
  /**
   * Measured control cost of running a task on a node, seconds, added to every exec time there
   * (the runner's work around the task's call: taking its inputs, invoking, committing outputs).
   */
  invokeOverheadSec?: Record<string, number>;
  /**
   * Measured control cost of one hop received on a node, seconds (a delivery through the queues,
   * empty): added to every transfer into a task on that node, same-node transfers included. The
   * sink hop pays the sending node's.
   */
  hopOverheadSec?: Record<string, number>;
  /**
   * Measured cost per byte of a hop between two tasks on one node, seconds per byte, on top of its
   * `hopOverheadSec` (the output kept in the node's store and copied into the receiver's work
   * folder: the direct data path). A same-node edge of d bytes costs hopOverheadSec + d × this.
   */
  localHopSecPerByte?: Record<string, number>;
  /** Source and sink hops over the home's links (optional). */
  home?: ProblemHome;
  /**
   * Cores of each host named by `nodes[].host`: the tasks of all nodes on that host never run more
   * than this many at once (each node still runs one at a time). A host not listed, or a node
   * without a host, is not limited beyond its own node.
   */
  hostCores?: Record<string, number>;
  /**
   * CPU a task costs its node outside its execution time, seconds (the runner taking its inputs,
   * invoking, committing its outputs): charged to the node's CPU quota only (`nodes[].cpus` < 1).
   */
  runnerCpuSec?: Record<string, number>;
  /**
   * CPU a task costs its node per byte of its inputs and outputs beyond `runnerCpuSec`, seconds per
   * byte (the runner keeping outputs in the node's store and copying inputs in): charged to the
   * node's CPU quota only, like `runnerCpuSec`, at the app's mean bytes per task.
   */
  runnerCpuSecPerByte?: Record<string, number>;
  /** CFS period of the nodes' CPU quotas (`nodes[].cpus`), seconds; default 0.1 (the kernel's and Docker's). */
  cpuPeriodSec?: number;
}

const linkModelSchema = {
  oneOf: [
    {
      type: 'object',
      required: ['a', 'b', 'c'],
      additionalProperties: false,
      properties: { a: { type: 'number' }, b: { type: 'number' }, c: { type: 'number' } },
    },
    {
      type: 'object',
      required: ['latencySec', 'bandwidthBytesPerSec'],
      additionalProperties: false,
      properties: { latencySec: { type: 'number', minimum: 0 }, bandwidthBytesPerSec: { type: 'number', exclusiveMinimum: 0 } },
    },
  ],
};

const perNodeSeconds = { type: 'object', additionalProperties: { type: 'number', minimum: 0 } } as const;
const taskBytes = {
  type: 'array',
  items: {
    type: 'object',
    required: ['task', 'bytes'],
    additionalProperties: false,
    properties: { task: { type: 'string' }, bytes: { type: 'number', minimum: 0 } },
  },
} as const;

export const problemSchema = {
  $id: 'https://jupiter.dev/schemas/problem.json',
  type: 'object',
  required: ['tasks', 'edges', 'nodes', 'exec', 'links'],
  additionalProperties: false,
  properties: {
    tasks: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
    edges: {
      type: 'array',
      items: {
        type: 'object',
        required: ['from', 'to', 'bytes'],
        additionalProperties: false,
        properties: { from: { type: 'string' }, to: { type: 'string' }, bytes: { type: 'number', minimum: 0 } },
      },
    },
    nodes: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['name'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', minLength: 1 },
          cpuPercent: { type: 'number', minimum: 0 },
          memPercent: { type: 'number', minimum: 0 },
          host: { type: 'string', minLength: 1 },
          cpus: { type: 'number', exclusiveMinimum: 0 },
        },
      },
    },
    exec: {
      type: 'object',
      additionalProperties: { type: 'object', additionalProperties: { type: 'number', minimum: 0 } },
    },
    links: {
      type: 'array',
      items: {
        type: 'object',
        required: ['from', 'to', 'model'],
        additionalProperties: false,
        properties: { from: { type: 'string' }, to: { type: 'string' }, model: linkModelSchema },
      },
    },
    defaultLink: linkModelSchema,
    entryNodes: { type: 'object', additionalProperties: { type: 'string' } },
    invokeOverheadSec: perNodeSeconds,
    hopOverheadSec: perNodeSeconds,
    localHopSecPerByte: perNodeSeconds,
    runnerCpuSec: perNodeSeconds,
    runnerCpuSecPerByte: perNodeSeconds,
    hostCores: { type: 'object', additionalProperties: { type: 'integer', minimum: 1 } },
    cpuPeriodSec: { type: 'number', exclusiveMinimum: 0 },
    home: {
      type: 'object',
      required: ['sources', 'sinks'],
      additionalProperties: false,
      properties: {
        sources: taskBytes,
        sinks: taskBytes,
        links: {
          type: 'array',
          items: {
            type: 'object',
            required: ['node', 'toNode', 'toHome'],
            additionalProperties: false,
            properties: { node: { type: 'string' }, toNode: linkModelSchema, toHome: linkModelSchema },
          },
        },
      },
    },
  },
} as const;

// Compiled on first use, not at import: every CLI process imports this module (through the
// mappers), few of them check a problem file.
let shapeValidator: ValidateFunction | undefined;
function validateShape(): ValidateFunction {
  if (!shapeValidator) {
    const Ajv = ajvClass();
    shapeValidator = new Ajv({ allErrors: true, strict: true }).compile(problemSchema);
  }
  return shapeValidator;
}

function ajvMessage(e: ErrorObject): string {
  const where = e.instancePath || '(top level)';
  if (e.keyword === 'additionalProperties') return `${where}: unknown field "${String(e.params.additionalProperty)}"`;
  if (e.keyword === 'oneOf') return `${where}: a link model is either {a, b, c} or {latencySec, bandwidthBytesPerSec}`;
  return `${where}: ${e.message ?? 'is invalid'}`;
}

/** Every problem with a problem, in words; empty when the problem is valid. */
export function problemErrors(value: unknown): string[] {
  const validate = validateShape();
  if (!validate(value)) {
    // oneOf branches report their own errors too; keep the summary line and drop the noise.
    const errs = validate.errors ?? [];
    const oneOfPaths = errs.filter((e) => e.keyword === 'oneOf').map((e) => e.instancePath);
    return [...new Set(errs
      .filter((e) => e.keyword === 'oneOf' || !oneOfPaths.some((p) => e.instancePath.startsWith(p) && e.schemaPath.includes('oneOf')))
      .map(ajvMessage))];
  }
  const p = value as unknown as Problem;
  const errors: string[] = [];
  const tasks = new Set<string>();
  for (const t of p.tasks) {
    if (tasks.has(t)) errors.push(`/tasks: task "${t}" is listed twice`);
    tasks.add(t);
  }
  const nodes = new Set<string>();
  for (const n of p.nodes) {
    if (nodes.has(n.name)) errors.push(`/nodes: node "${n.name}" is listed twice`);
    nodes.add(n.name);
  }
  const seenEdges = new Set<string>();
  p.edges.forEach((e, i) => {
    if (!tasks.has(e.from)) errors.push(`/edges/${i}/from: unknown task "${e.from}"`);
    if (!tasks.has(e.to)) errors.push(`/edges/${i}/to: unknown task "${e.to}"`);
    if (e.from === e.to) errors.push(`/edges/${i}: self-loop on "${e.from}"`);
    const key = `${e.from}\u0000${e.to}`;
    if (seenEdges.has(key)) errors.push(`/edges/${i}: edge ${e.from} -> ${e.to} is listed twice`);
    seenEdges.add(key);
  });
  for (const [t, row] of Object.entries(p.exec)) {
    if (!tasks.has(t)) errors.push(`/exec/${t}: unknown task "${t}"`);
    for (const n of Object.keys(row)) if (!nodes.has(n)) errors.push(`/exec/${t}/${n}: unknown node "${n}"`);
  }
  for (const t of p.tasks) {
    const row = p.exec[t];
    if (!row || !Object.keys(row).some((n) => nodes.has(n))) errors.push(`/exec/${t}: task "${t}" cannot run on any node (no execution time given)`);
  }
  const seenLinks = new Set<string>();
  p.links.forEach((l, i) => {
    if (!nodes.has(l.from)) errors.push(`/links/${i}/from: unknown node "${l.from}"`);
    if (!nodes.has(l.to)) errors.push(`/links/${i}/to: unknown node "${l.to}"`);
    const key = `${l.from}\u0000${l.to}`;
    if (seenLinks.has(key)) errors.push(`/links/${i}: link ${l.from} -> ${l.to} is listed twice`);
    seenLinks.add(key);
  });
  if (!p.defaultLink) {
    const missing: string[] = [];
    for (const a of nodes) for (const b of nodes) if (a !== b && !seenLinks.has(`${a}\u0000${b}`)) missing.push(`${a}->${b}`);
    if (missing.length) errors.push(`/links: no link model for ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ` and ${missing.length - 5} more` : ''} (list them or give defaultLink)`);
  }
  for (const [t, n] of Object.entries(p.entryNodes ?? {})) {
    if (!tasks.has(t)) errors.push(`/entryNodes/${t}: unknown task "${t}"`);
    if (!nodes.has(n)) errors.push(`/entryNodes/${t}: unknown node "${n}"`);
  }
  for (const field of ['invokeOverheadSec', 'hopOverheadSec', 'localHopSecPerByte', 'runnerCpuSec', 'runnerCpuSecPerByte'] as const) {
    for (const n of Object.keys(p[field] ?? {})) if (!nodes.has(n)) errors.push(`/${field}/${n}: unknown node "${n}"`);
  }
  const hosts = new Set(p.nodes.map((n) => n.host).filter((h): h is string => h !== undefined));
  for (const h of Object.keys(p.hostCores ?? {})) if (!hosts.has(h)) errors.push(`/hostCores/${h}: no node names host "${h}"`);
  if (p.home) {
    for (const side of ['sources', 'sinks'] as const) {
      const seen = new Set<string>();
      p.home[side].forEach((h, i) => {
        if (!tasks.has(h.task)) errors.push(`/home/${side}/${i}/task: unknown task "${h.task}"`);
        if (seen.has(h.task)) errors.push(`/home/${side}/${i}: task "${h.task}" is listed twice`);
        seen.add(h.task);
      });
    }
    const seen = new Set<string>();
    (p.home.links ?? []).forEach((l, i) => {
      if (!nodes.has(l.node)) errors.push(`/home/links/${i}/node: unknown node "${l.node}"`);
      if (seen.has(l.node)) errors.push(`/home/links/${i}: node "${l.node}" is listed twice`);
      seen.add(l.node);
    });
  }
  const cycle = findCycle(p);
  if (cycle) errors.push(`/edges: the task graph has a cycle: ${cycle.join(' -> ')}`);
  return errors;
}

function findCycle(p: Problem): string[] | undefined {
  const succ = new Map<string, string[]>(p.tasks.map((t) => [t, []]));
  for (const e of p.edges) succ.get(e.from)?.push(e.to);
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (t: string): string[] | undefined => {
    state.set(t, 1);
    stack.push(t);
    for (const s of succ.get(t) ?? []) {
      const st = state.get(s);
      if (st === 1) return [...stack.slice(stack.indexOf(s)), s];
      if (st === undefined) {
        const c = visit(s);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(t, 2);
    return undefined;
  };
  for (const t of p.tasks) {
    if (!state.has(t)) {
      const c = visit(t);
      if (c) return c;
    }
  }
  return undefined;
}

/** Validate a parsed JSON value; throws inputError listing what is wrong (CLI exit 2). */
export function validateProblem(value: unknown, file?: string): Problem {
  const errors = problemErrors(value);
  if (errors.length) {
    throw inputError(`invalid problem: ${errors.slice(0, 8).join('; ')}${errors.length > 8 ? ` (and ${errors.length - 8} more)` : ''}`, {
      file,
      hint: 'see mappers/README.md for the Problem JSON schema',
    });
  }
  return value as Problem;
}

/** Coefficients in seconds and bytes of any link model. */
export function quadraticOf(m: LinkModel): QuadraticLink {
  if ('a' in m) return m;
  return { a: 0, b: 1 / m.bandwidthBytesPerSec, c: m.latencySec };
}

/**
 * DRUPE's original quadratic predicts milliseconds for a volume in Kbit (1 Kbit = 125 bytes):
 * ms = A*k^2 + B*k + C. With k = bytes/125 and seconds = ms/1000 this is
 * seconds = (A/125^2/1000)*bytes^2 + (B/125/1000)*bytes + C/1000.
 */
export function linkFromDrupeMsKbit(A: number, B: number, C: number): QuadraticLink {
  return { a: A / (125 * 125 * 1000), b: B / (125 * 1000), c: C / 1000 };
}
