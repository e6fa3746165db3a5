// `jupiter graph <app> [--format dot|text]`: the DAG as Graphviz DOT, or as a layered text view
// (tasks grouped by depth, joins, broadcasts and sinks marked).
import { Option, type Command } from 'commander';
import { loadApp } from '../../../config/app/load.js';
import { taskDepths } from '../../../config/app/dag.js';
import { HOME, type AppSpec } from '../../../config/types.js';
import { action } from '../run.js';

function marks(app: AppSpec, name: string): string {
  const t = app.graph.node(name);
  const m: string[] = [];
  if (t.numInputs > 1) m.push(`[join ${t.numInputs}]`);
  if (t.broadcast && t.children.length > 1) m.push('[broadcast]');
  if (t.children.includes(HOME)) m.push('[sink]');
  return m.join(' ');
}

/** Layered text view: level 0 is the home feeding the entry tasks, then one level per depth. */
export function renderDagText(app: AppSpec): string {
  const depth = taskDepths(app.graph, app.dagTasks);
  const levels: string[][] = [];
  for (const n of app.dagTasks) (levels[depth.get(n)!] ??= []).push(n);
  const width = Math.max(...app.dagTasks.map((n) => (n + ' ' + marks(app, n)).trim().length));
  const out: string[] = [];
  out.push(`DAG of ${app.name}: ${app.dagTasks.length} task(s) in ${levels.length} level(s)`);
  out.push(`level 0 | ${HOME} -> ${app.entryTasks.join(', ')}`);
  levels.forEach((names, i) => {
    names.forEach((n, j) => {
      const t = app.graph.node(n);
      const label = (n + ' ' + marks(app, n)).trim().padEnd(width);
      const prefix = j === 0 ? `level ${i + 1}`.padEnd(7) : ''.padEnd(7);
      out.push(`${prefix} | ${label} -> ${t.children.join(', ')}`);
    });
  });
  const helpers = app.tasks.filter((t) => !t.isDag).map((t) => t.name);
  if (helpers.length) out.push(`helpers (run once, not in the DAG): ${helpers.join(', ')}`);
  out.push('legend: [join N] waits for N inputs of the same job; [broadcast] FLAG true: every output to every child ' +
    '(otherwise the i-th output goes to the i-th child); [sink] sends its outputs home');
  return out.join('\n');
}

const q = (s: string): string => JSON.stringify(s);

/** Graphviz DOT: the home appears twice (source and sink) so the picture reads left to right. */
export function renderDagDot(app: AppSpec): string {
  const out = [`digraph ${q(app.name)} {`, '  rankdir=LR;', '  node [shape=box, fontname="Helvetica"];'];
  out.push(`  ${q('home:in')} [label="home", shape=ellipse];`, `  ${q('home:out')} [label="home", shape=ellipse];`);
  for (const n of app.dagTasks) {
    const t = app.graph.node(n);
    const extra = [t.numInputs > 1 ? `join ${t.numInputs}` : '', t.broadcast ? 'FLAG true' : ''].filter(Boolean).join(', ');
    out.push(`  ${q(n)} [label=${q(extra ? `${n}\n${extra}` : n)}];`);
  }
  for (const e of app.entryTasks) out.push(`  ${q('home:in')} -> ${q(e)};`);
  for (const n of app.dagTasks) {
    const t = app.graph.node(n);
    t.children.forEach((c, i) => {
      const to = c === HOME ? 'home:out' : c;
      const label = t.broadcast || t.children.length === 1 ? '' : ` [label="${i + 1}"]`;
      out.push(`  ${q(n)} -> ${q(to)}${label};`);
    });
  }
  out.push('}');
  return out.join('\n');
}

export function register(program: Command): void {
  program
    .command('graph')
    .description('draw the DAG of an app (text layers, or Graphviz DOT)')
    .argument('<app>', 'app folder, or the name of an app under apps/')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'dot']).default('text'))
    .action(action(async (appArg: string, opts: { format: 'text' | 'dot' }) => {
      const app = await loadApp(appArg);
      process.stdout.write((opts.format === 'dot' ? renderDagDot(app) : renderDagText(app)) + '\n');
    }));
}
