// From profiles to a placement: wait for a complete profile of the live nodes, profile the
// app's execution when that is missing, then run the mapper (or take the app's static placement).
import type { Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import { inputError, runtimeError } from '../../config/errors.js';
import type { AppSpec, ProfileSnapshot } from '../../config/types.js';
import { mappers, placeHelperTasks, problemFromProfiles, simulate, type MapResult } from '../../mappers/index.js';
import { isComplete, readProfiles } from '../profiles/read.js';
import { requestExecProfiles } from '../profiles/exec.js';
import { gatherCalibration } from '../profiles/calibration.js';
import { calibrateExecProfiles } from '../../profilers/models/calibration.js';
import { inputsHashes } from '../../profilers/exec/inputs-hash.js';
import type { Progress } from '../progress.js';
import { dagSummary } from '../telemetry/topics.js';

export interface ProfileOptions {
  prefix: string;
  /** Nodes the app may use (the cluster's compute nodes). */
  nodes: string[];
  /** How long to wait for agents and a complete link profile. */
  waitMs: number;
  /** Profile the app's execution on every node when no record exists yet. */
  execProfile: boolean;
}

/**
 * Every profiled task has a profile, and none is stale: a profile that carries an inputsHash
 * other than the task's now (its script or something upstream changed) asks for profiling again,
 * in which the nodes run only what changed.
 */
async function hasExecProfiles(app: AppSpec, snap: ProfileSnapshot): Promise<boolean> {
  const wanted = app.tasks.filter((t) => t.isDag && t.execProfiler).map((t) => t.name);
  const mine = snap.exec.filter((e) => e.app === app.name);
  const have = new Set(mine.map((e) => e.task));
  if (!wanted.every((t) => have.has(t))) return false;
  const hashes = await inputsHashes(app);
  return mine.every((e) => e.inputsHash === undefined || e.inputsHash === hashes.get(e.task));
}

/**
 * Live profiles for the app, waiting for agents and profiling execution as needed; its tasks' times
 * scaled by what they took in its earlier deployments (profilers/models/calibration.ts).
 */
export async function gatherProfiles(redis: Redis, app: AppSpec, opts: ProfileOptions, progress: Progress): Promise<ProfileSnapshot> {
  const step = progress.step('Collecting profiles from the node agents');
  const deadline = Date.now() + opts.waitMs;
  let snap = await readProfiles(redis, { prefix: opts.prefix });
  for (;;) {
    const live = snap.nodes.map((n) => n.node).filter((n) => opts.nodes.includes(n));
    step.update(`${live.length}/${opts.nodes.length} nodes, ${snap.links.length} links`);
    if (live.length === opts.nodes.length && isComplete(snap, opts.nodes)) break;
    if (Date.now() > deadline) {
      if (live.length === 0) {
        step.fail();
        throw runtimeError('no node agent is alive', { hint: 'start one per node with `jupiter agent --node <name>` (the embedded default starts them itself)' });
      }
      break; // map onto the live nodes with what is known
    }
    await new Promise((r) => setTimeout(r, 200));
    snap = await readProfiles(redis, { prefix: opts.prefix });
  }
  step.done();
  if (opts.execProfile && !(await hasExecProfiles(app, snap))) {
    const exec = progress.step(`Profiling execution of ${app.name} on every node (as many at once per machine as it has cores)`);
    // Every task runs once per node: an app of 50 tasks that take seconds each takes minutes.
    // Each node's count of tasks is shown, and a node is waited for as long as it advances; a node
    // whose machine is busy profiling another node shows `queued`.
    const where = new Map<string, string>();
    const show = (node: string, state: string): void => {
      where.set(node, state);
      exec.update([...where].sort().map(([n, st]) => `${n} ${st}`).join(', '));
    };
    const silenceMs = 120_000;
    const res = await requestExecProfiles(redis, app, {
      prefix: opts.prefix,
      timeoutMs: silenceMs,
      nodes: opts.nodes,
      onPlan: (queues) => {
        for (const q of queues) for (const n of q) where.set(n, 'queued');
      },
      onAsk: (node) => show(node, 'started'),
      onProgress: (node, done, total) => show(node, `${done}/${total} tasks`),
      onReply: (r) => show(r.node, 'done'),
    });
    exec.done(res.missing.length ? `no news from ${res.missing.join(', ')} for ${silenceMs / 1000} s (the mapper uses default task times there)` : `${res.replies.length} nodes`);
    for (const r of res.replies) if (r.error) progress.info(`  ${r.node}: ${r.error} (the mapper uses default task times there)`);
    snap = await readProfiles(redis, { prefix: opts.prefix });
  }
  // What the app's tasks took in its earlier deployments (and the running one), against their profiles.
  const cal = calibrateExecProfiles(snap, app.name, (await gatherCalibration(redis, opts.prefix, app.name, snap)).cal);
  if (cal.applied.length > 0) {
    const each = cal.applied.map((c) => `${c.task} x${c.ratio.toFixed(2)}`).join(', ');
    progress.info(`task times scaled by what they took in earlier deployments (${cal.applied.reduce((s, c) => s + c.n, 0)} runs): ${each}`);
  }
  return cal.snapshot;
}

export interface PlaceOptions {
  mapper: string;
  seed?: number;
}

/** Whether the app pins every DAG task: it is then placed statically, no mapper runs. */
export function pinsEveryTask(app: AppSpec): boolean {
  return app.dagTasks.every((t) => app.staticPlacement[t]);
}

/** The mapping record of a deployment: mapper result (or static placement) plus the DAG to draw. */
export function place(app: AppSpec, snap: ProfileSnapshot, nodes: string[], opts: PlaceOptions): { record: MappingRecord; result: MapResult } {
  const live = nodes.filter((n) => snap.nodes.some((r) => r.node === n));
  if (live.length === 0) throw runtimeError('no live node to map onto');
  const problem = problemFromProfiles(app, snap, { nodes: live });
  let result: MapResult;
  if (pinsEveryTask(app)) {
    for (const t of app.dagTasks) {
      if (!live.includes(app.staticPlacement[t]!)) {
        throw runtimeError(`static placement puts ${t} on ${app.staticPlacement[t]}, which has no live agent`, {
          file: `${app.dir}/configuration.txt`,
          line: app.sourceLines?.staticPlacement[t],
        });
      }
    }
    result = { ...simulate(problem, app.staticPlacement), mapper: 'static' };
  } else {
    const fn = mappers[opts.mapper];
    if (!fn) throw inputError(`unknown mapper ${JSON.stringify(opts.mapper)}`, { hint: `one of: ${Object.keys(mappers).join(', ')}` });
    // Duplicated copies are not run by the dispatcher, so predictions must not count on them.
    result = fn(problem, { seed: opts.seed, allowDuplicates: false });
  }
  const mapping = { ...result.mapping, ...placeHelperTasks(app, live) };
  const record: MappingRecord = {
    app: app.name,
    mapper: result.mapper,
    mapping,
    schedule: Object.entries(result.schedule).map(([task, s]) => ({ task, node: s.node, start: s.start, finish: s.finish })),
    predictedMakespan: result.makespan,
    ts: Date.now(),
    dag: dagSummary(app),
  };
  return { record, result };
}
