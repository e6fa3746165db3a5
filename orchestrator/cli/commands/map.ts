// `jupiter map`: run a mapper on an app (with profiles) or on a raw Problem JSON and show the
// mapping, the predicted makespan and a text Gantt chart.
//   jupiter map <app> [--mapper name] [--profiles file.json] [--json] [--seed n] [--budget ms]
//   jupiter map --problem problem.json [--mapper name] [--json]
//   jupiter map --mapper list
import type { Command } from 'commander';
import { table as newTable } from '../../report/table.js';
import { loadApp } from '../../../config/app/load.js';
import { lineOfPointer, parseJsonText } from '../../../config/app/json.js';
import { readTextFile } from '../../../config/app/text.js';
import { loadClusterConfig } from '../../../config/cluster/load.js';
import { inputError } from '../../../config/errors.js';
import type { AppSpec, ClusterConfig, Mapping, ProfileSnapshot } from '../../../config/types.js';
import type { MapResult, Mapper, Problem } from '../../../mappers/index.js';
import { ganttText, listMappers, mappers, placeHelperTasks, problemErrors, problemFromProfiles } from '../../../mappers/index.js';
import { action } from '../run.js';

interface MapOptions {
  mapper?: string;
  profiles?: string;
  problem?: string;
  json?: boolean;
  seed?: string;
  budget?: string;
}

/**
 * Profiles used when `<app>` is given without --profiles: the live agents' profiles from Redis
 * (orchestrator/profiles/live.ts; dead nodes are left out). With no live agent: every node of
 * the cluster equal (cpu 10%, mem 10%), every task 1 s with 1 MB of output on every node,
 * 1 Gbit/s links with 1 ms latency.
 */
export async function defaultProfiles(app: AppSpec, cluster: ClusterConfig): Promise<{ profiles: ProfileSnapshot; source: string }> {
  // Loaded on use: reading live profiles needs the Redis client.
  const { liveProfiles } = await import('../../profiles/live.js');
  const live = await liveProfiles(cluster, { app: app.name, say: (l) => process.stderr.write(`map: ${l}\n`) });
  if (live) return { profiles: live, source: `live profiles of ${live.nodes.length} agent(s)` };
  process.stderr.write('map: using the default local profile (equal nodes, 1 s tasks, 1 Gbit/s links)\n');
  const now = Date.now();
  const nodes = cluster.nodes.map((n) => n.name);
  const profiles: ProfileSnapshot = {
    takenAt: now,
    nodes: nodes.map((node) => ({ node, cpuPercent: 10, cpuMean: 10, memPercent: 10, memMean: 10, cores: 1, load1: 0, freeMemBytes: 0, updatedAt: now })),
    links: nodes.flatMap((from) => nodes.filter((to) => to !== from).map((to) => ({
      from, to, a: 0, b: 0, c: 0, latencySec: 0.001, bandwidthBytesPerSec: 125e6, samples: 0, updatedAt: now,
    }))),
    exec: app.dagTasks.flatMap((task) => nodes.map((node) => ({ app: app.name, task, node, durationSec: 1, outputBytes: 1e6, updatedAt: now }))),
  };
  return { profiles, source: 'default local profile: equal nodes, 1 s tasks, 1 Gbit/s' };
}

async function readJson(file: string, what: string): Promise<{ value: unknown; text: string }> {
  const text = await readTextFile(file, { maxBytes: 64 * 1024 * 1024, what });
  return { value: parseJsonText(text, file, what), text };
}

async function readProfilesFile(file: string): Promise<ProfileSnapshot> {
  const { value } = await readJson(file, 'a profiles file');
  const v = value as Partial<ProfileSnapshot> | null;
  if (!v || typeof v !== 'object' || !Array.isArray(v.nodes) || !Array.isArray(v.links) || !Array.isArray(v.exec)) {
    throw inputError('a profiles file needs arrays "nodes", "links" and "exec"', { file, line: 1, hint: 'see ProfileSnapshot in config/types.ts' });
  }
  return { takenAt: v.takenAt ?? Date.now(), nodes: v.nodes, links: v.links, exec: v.exec, ...(v.overheads ? { overheads: v.overheads } : {}), ...(v.homeLinks ? { homeLinks: v.homeLinks } : {}) };
}

async function readProblemFile(file: string): Promise<Problem> {
  const { value, text } = await readJson(file, 'a problem file');
  const errors = problemErrors(value);
  if (errors.length) {
    const pointer = (errors[0] as string).split(':')[0] ?? '';
    throw inputError(`invalid problem: ${errors.slice(0, 6).join('; ')}${errors.length > 6 ? ` (and ${errors.length - 6} more)` : ''}`, {
      file,
      line: pointer.startsWith('/') ? lineOfPointer(text, pointer) : 1,
      hint: 'the Problem JSON schema is documented in mappers/README.md',
    });
  }
  return value as Problem;
}

function fmt(x: number): string {
  if (x === 0) return '0';
  return Math.abs(x) >= 100 ? x.toFixed(1) : Math.abs(x) >= 1 ? x.toFixed(3) : x.toPrecision(3);
}

function render(result: MapResult, problem: Problem, helpers: Mapping, title: string): string {
  const table = newTable(['task', 'node', 'start (s)', 'finish (s)']);
  const rows = Object.entries(result.schedule).sort((a, b) => a[1].start - b[1].start || a[0].localeCompare(b[0]));
  for (const [task, s] of rows) table.push([task, s.node, fmt(s.start), fmt(s.finish)]);
  for (const d of result.duplicates) table.push([`${d.task} (copy)`, d.node, fmt(d.start), fmt(d.finish)]);
  for (const [task, node] of Object.entries(helpers)) table.push([`${task} (helper)`, node, '-', '-']);
  const out = [title, table.toString(), `predicted makespan: ${fmt(result.makespan)} s (mapper ${result.mapper}${result.origin ? `, from ${result.origin}` : ''})`, ''];
  out.push(ganttText(result, problem.nodes.map((n) => n.name)));
  return out.join('\n');
}

function checkMapperName(name: string): Mapper {
  const fn = mappers[name];
  if (!fn) throw inputError(`unknown mapper "${name}"`, { hint: `one of: ${Object.keys(mappers).join(', ')} (jupiter map --mapper list)` });
  return fn;
}

async function run(appArg: string | undefined, opts: MapOptions): Promise<void> {
  if (opts.mapper === 'list') {
    const list = listMappers();
    if (opts.json) process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    else {
      const w = Math.max(...list.map((m) => m.name.length));
      process.stdout.write(`${list.map((m) => `${m.name.padEnd(w)}  ${m.description}`).join('\n')}\n`);
    }
    return;
  }
  if (!appArg && !opts.problem) throw inputError('give an app or --problem <file>', { hint: 'jupiter map <app> --mapper heft, or jupiter map --problem problem.json' });
  if (appArg && opts.problem) throw inputError('give either an app or --problem, not both');
  const seed = opts.seed === undefined ? 1 : Number(opts.seed);
  if (!Number.isInteger(seed)) throw inputError(`--seed must be an integer, got "${opts.seed}"`);
  const budgetMs = opts.budget === undefined ? undefined : Number(opts.budget);
  if (budgetMs !== undefined && !(budgetMs >= 0)) throw inputError(`--budget must be a number of milliseconds, got "${opts.budget}"`);

  let problem: Problem;
  let helpers: Mapping = {};
  let title: string;
  let mapperName = opts.mapper;
  if (mapperName !== undefined) checkMapperName(mapperName);
  let live: { app: AppSpec; cluster: ClusterConfig } | undefined;
  if (opts.problem) {
    problem = await readProblemFile(opts.problem);
    title = `problem ${opts.problem}: ${problem.tasks.length} task(s), ${problem.nodes.length} node(s)`;
  } else {
    const app = await loadApp(appArg as string);
    const cluster = await loadClusterConfig();
    mapperName ??= cluster.mapper;
    // Before any agent is contacted: a typo must not cost a round of live profiling.
    checkMapperName(mapperName);
    const { profiles, source } = opts.profiles
      ? { profiles: await readProfilesFile(opts.profiles), source: `profiles ${opts.profiles}` }
      : await defaultProfiles(app, cluster);
    const nodes = cluster.nodes.map((n) => n.name);
    const known = new Set(profiles.nodes.map((n) => n.node));
    // Profiled nodes only: live profiles leave out nodes whose agent died (defaultProfiles).
    const usable = nodes.filter((n) => known.has(n));
    if (usable.length === 0) throw inputError(`no node of the cluster (${nodes.join(', ')}) appears in the profiles`, { file: opts.profiles });
    problem = problemFromProfiles(app, profiles, { nodes: usable });
    helpers = placeHelperTasks(app, usable);
    if (!opts.profiles) live = { app, cluster };
    title = `app ${app.name}: ${problem.tasks.length} task(s) on ${usable.length} node(s) (${source})`;
  }
  mapperName ??= 'heft';
  const fn = checkMapperName(mapperName);
  // WAVE with live agents runs for real on the agents (orchestrator/profiles/wave.ts).
  const { distributedWaveIfLive } = await import('../../profiles/wave.js');
  const result = (live && (await distributedWaveIfLive(live.app, live.cluster, problem, mapperName, seed))) || fn(problem, { seed, budgetMs });
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ ...result, mapping: { ...result.mapping, ...helpers }, helpers }, null, 2)}\n`);
    return;
  }
  process.stdout.write(`${render(result, problem, helpers, title)}\n`);
}

export function register(program: Command): void {
  program
    .command('map')
    .description('map an app (or a raw problem) onto nodes and show the predicted schedule')
    .argument('[app]', 'app folder or name under apps/')
    .option('-m, --mapper <name>', 'mapper name, or "list" to list them (default: the cluster configuration\'s, else heft)')
    .option('--profiles <file>', 'profiles JSON (ProfileSnapshot) instead of the default local profile')
    .option('--problem <file>', 'map a raw Problem JSON (schema: mappers/README.md)')
    .option('--json', 'print the result as JSON')
    .option('--seed <n>', 'seed of random choices (wave-random, best)', '1')
    .option('--budget <ms>', 'time budget of the best mapper\'s local search in ms (default 1000)')
    .action(action(async (app: string | undefined, opts: MapOptions) => run(app, opts)));
}
