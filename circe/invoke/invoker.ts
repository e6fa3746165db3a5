// Calls one task's code for one item. Python: Jupiter's `task(filename, pathin, pathout)` in a
// persistent interpreter (`filename` is a str for one input, a list for several). JavaScript or
// TypeScript: an exported `task(inputs, pathin, pathout)`, sync or async, loaded once.
import { basename, dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AppSpec, TaskSpec } from '../../config/types.js';
import { inputError } from '../../config/errors.js';
import { checkOutputs } from './paths.js';
import { PythonWorker } from './python.js';
import type { PyForkServer } from './py-forkserver.js';
import { centralizedLaunch, type Launch } from '../compat/centralized.js';
import { defaultWorkRoot } from '../runner/work-slots.js';

export interface TaskInvoker {
  /** Run the task on files already in pathin; returns real output paths inside pathout. */
  invoke(inputs: string[], pathin: string, pathout: string): Promise<string[]>;
  close(): Promise<void>;
  /** pid of the persistent Python worker (undefined for JS/TS tasks). */
  readonly pid?: number;
}

type JsTask = (inputs: string[], pathin: string, pathout: string) => unknown;

async function loadJsTask(task: TaskSpec): Promise<JsTask> {
  const url = pathToFileURL(task.scriptFile).href;
  let mod: Record<string, unknown>;
  if (task.language === 'typescript') {
    // tsx only when a TypeScript task needs it: it hooks module loading of this file alone.
    const { tsImport } = await import('tsx/esm/api');
    mod = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  } else {
    mod = (await import(url)) as Record<string, unknown>;
  }
  const fn = (mod.task ?? (mod.default as Record<string, unknown> | undefined)?.task) as unknown;
  if (typeof fn !== 'function') {
    throw inputError(`script of task ${task.name} does not export a function named task`, {
      file: task.scriptFile,
      hint: 'export function task(inputs, pathin, pathout) { ...; return [outputPaths] }',
    });
  }
  return fn as JsTask;
}

function asPaths(task: string, v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v as string[];
  throw new Error(`task ${task} returned ${typeof v}; expected an array of output paths`);
}

// Python workers started ahead of createInvoker(), by task name, with their start-up.
const prestarted = new Map<string, { worker: PythonWorker; launch?: Launch; started: Promise<void> }>();

/**
 * Start a Python task's interpreter now (no-op for other tasks): it then boots and imports the
 * task's module while the runner loads its own modules and connects to Redis, instead of after.
 * createInvoker() takes this worker over and reports its start-up error, if any, as usual.
 */
export function prestartInvoker(app: AppSpec, task: TaskSpec, node: string, opts: InvokerOptions = {}): void {
  if (!task.isDag || task.language !== 'python' || prestarted.has(task.name)) return;
  const launch = centralizedLaunch(app, task, node, defaultWorkRoot());
  const worker = new PythonWorker(task.name, task.scriptFile, undefined, launch, opts.stderr, forkOf(opts));
  prestarted.set(task.name, { worker, launch, started: worker.start() });
}

/** Close a prestarted interpreter nobody took over (its task left before its runner started). */
export async function discardPrestarted(taskName: string): Promise<void> {
  const pre = prestarted.get(taskName);
  if (!pre) return;
  prestarted.delete(taskName);
  await pre.started.catch(() => undefined);
  await pre.worker.close().catch(() => undefined);
  pre.launch?.cleanup();
}

async function startPython(app: AppSpec, task: TaskSpec, node: string, opts: InvokerOptions): Promise<{ worker: PythonWorker; launch?: Launch }> {
  const pre = prestarted.get(task.name);
  prestarted.delete(task.name);
  if (pre && pre.worker.scriptFile === task.scriptFile) {
    await pre.started;
    return pre;
  }
  await pre?.worker.close();
  pre?.launch?.cleanup();
  const launch = centralizedLaunch(app, task, node, defaultWorkRoot());
  const worker = new PythonWorker(task.name, task.scriptFile, undefined, launch, opts.stderr, forkOf(opts));
  await worker.start();
  return { worker, launch };
}

export interface InvokerOptions {
  /** File descriptor for a Python task's output (default: this process's stderr). */
  stderr?: number;
  /** Fork Python workers from this server (a node host's) instead of starting an interpreter each. */
  forkServer?: PyForkServer;
  /** The file behind `stderr`, which a forked worker opens itself. */
  stderrPath?: string;
}

function forkOf(opts: InvokerOptions): { server: PyForkServer; stderrPath?: string } | undefined {
  return opts.forkServer && { server: opts.forkServer, stderrPath: opts.stderrPath };
}

/** A JavaScript or TypeScript DAG task's invoker: its module imported into this process. */
export async function createJsInvoker(task: TaskSpec): Promise<TaskInvoker> {
  const fn = await loadJsTask(task);
  return {
    pid: undefined,
    async invoke(inputs, pathin, pathout) {
      const result = await fn([...inputs], pathin, pathout);
      return checkOutputs(task.name, asPaths(task.name, result), pathout);
    },
    async close() {},
  };
}

export async function createInvoker(app: AppSpec, task: TaskSpec, node = 'local', opts: InvokerOptions = {}): Promise<TaskInvoker> {
  if (!task.isDag) {
    throw inputError(`task ${task.name} of app ${app.name} is a non-DAG helper; it runs once as a script (runHelper), not per item`);
  }
  if (task.language === 'python') {
    const { worker, launch } = await startPython(app, task, node, opts);
    return {
      get pid() {
        return worker.pid;
      },
      async invoke(inputs, pathin, pathout) {
        const filename = inputs.length === 1 ? inputs[0]! : inputs;
        return checkOutputs(task.name, await worker.invoke(filename, pathin, pathout), pathout);
      },
      close: () => worker.close().finally(() => launch?.cleanup()),
    };
  }
  if (task.language === 'javascript' || task.language === 'typescript') return createJsInvoker(task);
  throw inputError(`task ${task.name} is a ${task.language} script; DAG tasks must be Python, JavaScript or TypeScript modules with a task() function`, {
    file: task.scriptFile,
    hint: 'shell scripts can only be non-DAG helper tasks (`<name> 1 false <name>`)',
  });
}

/** Python tasks run one after another in one interpreter (see sharedPythonInvoker). */
export interface SharedPythonInvoker {
  /** Whether `task` can run here (a Python DAG task of this script folder). */
  serves(task: TaskSpec): boolean;
  /** Import the task's module (outside any timing). */
  load(task: TaskSpec): Promise<void>;
  invoke(task: TaskSpec, inputs: string[], pathin: string, pathout: string): Promise<string[]>;
  close(): Promise<void>;
}

/**
 * One interpreter for many Python tasks of one script folder, for the execution profiler: an
 * interpreter start per task costs far more than a no-op-sized task's call, and profiling runs
 * every task of the app once on every node. Each task's module is imported on first use; the
 * call contract and output checks are the runner's. A task that fails here deserves a retry in
 * an interpreter of its own (createInvoker), since other tasks' modules share this one.
 */
export function sharedPythonInvoker(scriptsDir: string, opts: InvokerOptions = {}): SharedPythonInvoker {
  const dir = resolve(scriptsDir);
  const worker = new PythonWorker('(shared)', `${dir}/`, undefined, undefined, opts.stderr);
  const moduleOf = (task: TaskSpec): string => basename(task.scriptFile).replace(/\.py$/, '');
  return {
    serves: (task) => task.isDag && task.language === 'python' && dirname(resolve(task.scriptFile)) === dir,
    async load(task) {
      await worker.invoke(undefined, dir, dir, moduleOf(task));
    },
    async invoke(task, inputs, pathin, pathout) {
      const filename = inputs.length === 1 ? inputs[0]! : inputs;
      return checkOutputs(task.name, await worker.invoke(filename, pathin, pathout, moduleOf(task)), pathout);
    },
    close: () => worker.close(),
  };
}
