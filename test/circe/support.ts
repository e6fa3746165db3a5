// Helpers for the circe tests: a small AppSpec builder for fixture apps (so runner tests do not
// depend on the full loader), and polling.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Graph } from '@dagrejs/graphlib';
import { HOME, type AppSpec, type ScriptLanguage, type TaskSpec } from '../../config/types.js';
import { fixturesDir } from '../support/paths.js';

export const fixtureAppDir = (name: string): string => resolve(fixturesDir, 'apps-ok', name);

const LANG: Array<[string, ScriptLanguage]> = [['.py', 'python'], ['.mjs', 'javascript'], ['.js', 'javascript'], ['.ts', 'typescript'], ['.sh', 'shell']];

/** Build an AppSpec from configuration.txt + scripts/config.json of a simple app folder. */
export function specOf(dir: string): AppSpec {
  const lines = readFileSync(join(dir, 'configuration.txt'), 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
  const n = Number(lines[0]);
  const cj = JSON.parse(readFileSync(join(dir, 'scripts', 'config.json'), 'utf8')) as { taskname_map: Record<string, [string, boolean, ...Array<string | number | boolean>]> };
  const tasks: TaskSpec[] = lines.slice(1, n + 1).map((l, i) => {
    const [name, k, flag, ...children] = l.split(/\s+/) as [string, string, string, ...string[]];
    const [script, isDag, ...args] = cj.taskname_map[name]!;
    const found = LANG.find(([ext]) => existsSync(join(dir, 'scripts', script + ext)))!;
    return {
      name, numInputs: Number(k), broadcast: flag === 'true', children: isDag ? children : [], isDag, script,
      scriptFile: join(dir, 'scripts', script + found[0]), language: found[1], args, execProfiler: true, line: i + 2,
    };
  });
  const dag = tasks.filter((t) => t.isDag);
  const graph = new Graph<string, TaskSpec, undefined>({ directed: true });
  for (const t of dag) graph.setNode(t.name, t);
  for (const t of dag) for (const c of t.children) if (c !== HOME) graph.setEdge(t.name, c);
  const hasParent = new Set(dag.flatMap((t) => t.children));
  const sampleDir = join(dir, 'sample_input');
  return {
    name: dir.split('/').pop()!, dir, tasks,
    dagTasks: dag.map((t) => t.name),
    entryTasks: dag.filter((t) => !hasParent.has(t.name)).map((t) => t.name),
    sinkTasks: dag.filter((t) => t.children.includes(HOME)).map((t) => t.name),
    graph: graph as unknown as AppSpec['graph'], staticPlacement: {}, ports: { docker: {}, service: {} }, nameConvert: {}, inputNode: {},
    sampleInputs: existsSync(sampleDir) ? readdirSync(sampleDir).sort().map((f) => join(sampleDir, f)) : [],
    extra: {},
  };
}

export async function until<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
