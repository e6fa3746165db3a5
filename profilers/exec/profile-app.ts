// The execution profiler's work on one node: run every DAG task of an app once on the app's
// first sample input, in the node's runtime (the process runtime: the task's code runs through
// circe's invoker, a persistent Python interpreter or the imported JS/TS module), chaining each
// task's outputs to its children by the task's FLAG like a real run. Records wall time of the
// task call (the interpreter start and module import are not counted, as in a deployed runner
// they happen once; a call under 1 s is a warm-up, then timed again 2-10 times and the fastest
// counts: time-calls.ts) and the bytes of its outputs. JavaScript and TypeScript tasks run in a
// process of their own for it (js-timing-host.ts), as in their runner, not in the agent's.
// Not profiled: tasks with `exec_profiler: false` (skipped, never run), and tasks that need an
// output of a skipped or failed task (they have nothing to run on). Where a task would run
// more than once per item (FLAG true with several outputs), its first run is timed.
// A task whose script, inputs and upstream are unchanged since a profile given in `reuse`
// (inputsHash, by content) is not run again, unless a changed task downstream needs its output.
// Python tasks of the app's script folder run in one shared interpreter (each module imported
// before its timed call), so a 200-task app costs one interpreter start, not 200; a task that
// fails there is run again in an interpreter of its own before it counts as failed. Tasks run
// one at a time, so no timed call competes with another of this node; with `turn`, none competes
// with another node's of the same machine either (agent/machine-turn.ts).
import { copyFile, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { inputsHashes, topoOrder } from './inputs-hash.js';
import { HOME, type AppSpec, type ExecProfile, type TaskSpec } from '../../config/types.js';
import { createInvoker, sharedPythonInvoker, type SharedPythonInvoker } from '../../circe/invoke/invoker.js';
import { jobPrefix } from '../../config/app/job.js';
import { centralizedUnavailable, usesCentralized } from '../../circe/compat/centralized.js';
import { atOnce, type Turn } from '../agent/machine-turn.js';
import { timeCalls, type TimedCall } from './time-calls.js';
import { JsTimingHost } from './js-timing.js';

export interface SkippedTask {
  task: string;
  reason: string;
}

export interface AppProfileResult {
  node: string;
  app: string;
  profiles: ExecProfile[];
  /** Tasks whose profile was reused (unchanged inputsHash), included in `profiles`. */
  reused: string[];
  skipped: SkippedTask[];
  failed: SkippedTask[];
}

/**
 * The task's timed calls (time-calls.ts) in this node's turn on its machine, the warm-up too (a
 * first call is the CPU-hungriest of all): a JavaScript or TypeScript task in the timing host, a
 * Python task in the shared interpreter when it loads there, else in an interpreter of its own.
 */
async function timedCall(app: AppSpec, task: TaskSpec, node: string, names: string[], pathin: string, pathout: string, hosts: { shared?: SharedPythonInvoker; js: () => JsTimingHost }, turn: Turn): Promise<TimedCall> {
  if (task.language === 'javascript' || task.language === 'typescript') return turn(() => hosts.js().time(task, names, pathin, pathout));
  const repeat = (call: () => Promise<string[]>): Promise<TimedCall> => turn(() => timeCalls(call));
  const shared = hosts.shared;
  if (shared?.serves(task)) {
    try {
      await shared.load(task);
      return await repeat(() => shared.invoke(task, names, pathin, pathout));
    } catch {
      // Judged alone below: the shared interpreter holds other tasks' modules too.
      await rm(pathout, { recursive: true, force: true });
      await mkdir(pathout, { recursive: true });
    }
  }
  // The node, so that the task sees the NODE_NAME it will see in its runner.
  const invoker = await createInvoker(app, task, node);
  try {
    return await repeat(() => invoker.invoke(names, pathin, pathout));
  } finally {
    await invoker.close().catch(() => undefined);
  }
}

/** Outputs of `task` that go to `child` under the task's FLAG. */
function outputsFor(task: TaskSpec, outputs: string[], child: string): string[] {
  if (task.broadcast) return outputs;
  const i = task.children.indexOf(child);
  return i >= 0 && outputs[i] ? [outputs[i]] : [];
}

export interface ProfileAppOptions {
  /** Earlier profiles of this node, by task: those whose inputsHash still matches are reused. */
  reuse?: Map<string, ExecProfile>;
  log?: (line: string) => void;
  workDir?: string;
  /** Called after each task (profiled, skipped or failed): tasks dealt with so far, of all. */
  onTask?: (done: number, total: number) => void;
  /** Times each task's calls in this node's turn on its machine (agent/machine-turn.ts); default: at once. */
  turn?: Turn;
}


export async function profileApp(app: AppSpec, node: string, opts: ProfileAppOptions = {}): Promise<AppProfileResult> {
  const result: AppProfileResult = { node, app: app.name, profiles: [], reused: [], skipped: [], failed: [] };
  if (app.sampleInputs.length === 0) {
    // An empty sample_input/ is allowed (the app waits for `submit`): nothing to measure with.
    for (const t of topoOrder(app)) result.skipped.push({ task: t.name, reason: 'sample_input/ is empty' });
    return result;
  }
  const order = topoOrder(app);
  const parents = new Map<string, TaskSpec[]>();
  for (const t of order) for (const c of t.children) if (c !== HOME) parents.set(c, [...(parents.get(c) ?? []), t]);
  const hashes = await inputsHashes(app);
  // Reused: an unchanged profile, unless a task that runs needs this one's output (then it runs too).
  const reused = new Map<string, ExecProfile>();
  for (const t of order) {
    const old = opts.reuse?.get(t.name);
    if (t.execProfiler && old?.inputsHash !== undefined && old.inputsHash === hashes.get(t.name)) reused.set(t.name, old);
  }
  // Children first: a parent kept for a child that runs is then seen running by its own parents.
  for (const t of [...order].reverse()) {
    if (reused.has(t.name) || !t.execProfiler) continue;
    for (const p of parents.get(t.name) ?? []) reused.delete(p.name);
  }
  const root = await mkdtemp(join(opts.workDir ?? tmpdir(), `jupiter-exec-${app.name}-${node}-`));
  const outputs = new Map<string, string[]>();
  const blocked = new Map<string, string>();
  const firstPython = order.find((t) => t.language === 'python' && t.execProfiler);
  // Not for original apps that import from /centralized_scheduler: their workers need a launch of their own.
  const shared = firstPython && !usesCentralized(app) ? sharedPythonInvoker(dirname(firstPython.scriptFile)) : undefined;
  // Such an app's Python tasks need their scripts mounted at /centralized_scheduler, which takes
  // root (an agent in a container is not): say so once per task rather than fail each.
  const noMount = usesCentralized(app) ? centralizedUnavailable(app) : undefined;
  let jsHost: JsTimingHost | undefined;
  // One task: profiled, or skipped / failed with the reason (its children are then skipped).
  const one = async (task: TaskSpec): Promise<void> => {
    const ps = parents.get(task.name) ?? [];
    const blocker = ps.find((p) => blocked.has(p.name));
    if (!task.execProfiler) {
      result.skipped.push({ task: task.name, reason: 'exec_profiler is false' });
      blocked.set(task.name, 'skipped');
      return;
    }
    if (noMount && task.language === 'python') {
      result.skipped.push({ task: task.name, reason: noMount });
      blocked.set(task.name, 'skipped');
      return;
    }
    const old = reused.get(task.name);
    if (old) {
      result.profiles.push({ ...old, node });
      result.reused.push(task.name);
      return;
    }
    if (blocker) {
      result.skipped.push({ task: task.name, reason: `needs the output of ${blocked.get(blocker.name)} task ${blocker.name}` });
      blocked.set(task.name, 'skipped');
      return;
    }
    // NUM_INPUTS files of one job: what the parents sent it (a FLAG-true parent may send
    // several), or the files of the first sample job for an entry task.
    const firstJob = jobPrefix(basename(app.sampleInputs[0]!));
    const sources = (ps.length === 0
      ? app.sampleInputs.filter((f) => jobPrefix(basename(f)) === firstJob)
      : ps.flatMap((p) => outputsFor(p, outputs.get(p.name) ?? [], task.name))).slice(0, Math.max(1, task.numInputs));
    if (sources.length === 0) {
      result.skipped.push({ task: task.name, reason: 'its parents produced no output for it' });
      blocked.set(task.name, 'skipped');
      return;
    }
    const pathin = join(root, task.name, 'in');
    const pathout = join(root, task.name, 'out');
    await mkdir(pathin, { recursive: true });
    await mkdir(pathout, { recursive: true });
    const names: string[] = [];
    for (const [i, src] of sources.entries()) {
      let name = basename(src);
      if (names.includes(name)) name = `${i}-${name}`;
      await copyFile(src, join(pathin, name));
      names.push(name);
    }
    try {
      const { durationSec, outs } = await timedCall(app, task, node, names, pathin, pathout, { shared, js: () => (jsHost ??= new JsTimingHost()) }, opts.turn ?? atOnce);
      let outputBytes = 0;
      for (const o of outs) outputBytes += (await stat(o)).size;
      outputs.set(task.name, outs);
      result.profiles.push({ app: app.name, task: task.name, node, durationSec, outputBytes, updatedAt: Date.now(), inputsHash: hashes.get(task.name) });
      opts.log?.(`exec profile ${app.name}/${task.name}: ${(durationSec * 1000).toFixed(0)} ms, ${outputBytes} B out`);
    } catch (e) {
      result.failed.push({ task: task.name, reason: (e as Error).message });
      blocked.set(task.name, 'failed');
    }
  };
  try {
    for (const [index, task] of order.entries()) {
      await one(task);
      opts.onTask?.(index + 1, order.length);
    }
  } finally {
    await shared?.close().catch(() => undefined);
    await jsHost?.close().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
  return result;
}
