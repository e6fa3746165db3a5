// loadApp(): read a whole app folder (configuration.txt, scripts/config.json, scripts, app_config.ini,
// name_convert.txt, input_node.txt, sample_input/) into one validated AppSpec. Every problem is an
// inputError naming the file and line, with a hint.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inputError } from '../errors.js';
import { errorsText, lazyValidator } from '../schemas/ajv.js';
import { appSpecSchema } from '../schemas/app-spec.js';
import { SAFE_NAME, type AppSpec, type TaskSpec } from '../types.js';
import { checkName, parseConfiguration } from './configuration.js';
import { parseConfigJson } from './config-json.js';
import { buildDag } from './dag.js';
import { parseAppConfigIni } from './ini.js';
import { parseInputNode } from './input-node.js';
import { jobPrefix } from './job.js';
import { parseNameConvert } from './name-convert.js';
import { resolveScript } from './scripts.js';
import { displayPath, isDirectory, isFile, readTextFile } from './text.js';

export interface LoadAppOptions {
  /** Folder holding apps by name (checked before ./apps and the repository's apps/). */
  appsDir?: string;
}

const validateModel = lazyValidator(appSpecSchema);

function repoAppsDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, 'apps');
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

async function listApps(dirs: string[]): Promise<string[]> {
  const names = new Set<string>();
  for (const d of dirs) {
    try {
      for (const e of await readdir(d, { withFileTypes: true })) if (e.isDirectory() && existsSync(join(d, e.name, 'configuration.txt'))) names.add(e.name);
    } catch {
      // a missing apps folder just has no apps
    }
  }
  return [...names].sort();
}

/** The absolute folder of an app given as a path or as a name under apps/. */
export async function resolveAppDir(pathOrName: string, opts: LoadAppOptions = {}): Promise<string> {
  if (pathOrName.trim() === '') throw inputError('no app given', { hint: 'give an app folder (apps/dummy) or an app name (dummy)' });
  const looksLikePath = isAbsolute(pathOrName) || /[\\/]/.test(pathOrName) || pathOrName.startsWith('.');
  const direct = resolve(pathOrName);
  if (await isDirectory(direct)) return direct;
  const searched = [opts.appsDir, join(process.cwd(), 'apps'), repoAppsDir()].filter((d): d is string => !!d).map((d) => resolve(d));
  if (!looksLikePath && SAFE_NAME.test(pathOrName)) {
    for (const d of searched) {
      const dir = join(d, pathOrName);
      if (await isDirectory(dir)) return dir;
    }
  }
  const known = await listApps(searched);
  throw inputError(looksLikePath ? `no app folder at ${pathOrName}` : `no app named ${JSON.stringify(pathOrName)}`, {
    hint: `give an app folder path${known.length ? ` or one of: ${known.join(', ')}` : ''}`,
  });
}

async function sampleInputs(dir: string): Promise<string[]> {
  const folder = join(dir, 'sample_input');
  const shown = displayPath(folder);
  if (!(await isDirectory(folder))) {
    throw inputError('sample_input/ folder is missing', { file: shown, hint: 'put one or more input files in sample_input/: the home feeds them to the entry tasks and the profiler runs tasks on them' });
  }
  const files: string[] = [];
  for (const e of (await readdir(folder, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (e.name.startsWith('.') || !e.isFile()) continue;
    const path = join(folder, e.name);
    if (!SAFE_NAME.test(e.name)) {
      throw inputError(`sample input name ${JSON.stringify(e.name)} is not allowed`, { file: displayPath(path), hint: "use letters, digits, '_', '.', '-' in file names" });
    }
    if (jobPrefix(e.name) === '') throw inputError(`sample input ${e.name} has an empty job prefix`, { file: displayPath(path), hint: 'the job id is the name before the first `_` (or first `.`); start the name with it, e.g. 1botnet.ipsum' });
    // Files sharing a job prefix are one job (one item), as in the original: the home source
    // groups them (see circe/home/source.ts). An empty folder is fine: deploy then waits for submit.
    files.push(path);
  }
  return files;
}

/** Load and validate an app folder (a path, or a name under apps/). */
export async function loadApp(pathOrName: string, opts: LoadAppOptions = {}): Promise<AppSpec> {
  const dir = await resolveAppDir(pathOrName, opts);
  const name = basename(dir);
  checkName(name, 'app', displayPath(dir), 0);

  const confFile = join(dir, 'configuration.txt');
  const confShown = displayPath(confFile);
  const conf = parseConfiguration(await readTextFile(confFile, { what: 'configuration.txt (the DAG)' }), confShown);
  buildDag(name, conf.tasks, confShown); // graph rules before script checks: they explain more

  const jsonFile = join(dir, 'scripts', 'config.json');
  const jsonShown = displayPath(jsonFile);
  const cj = parseConfigJson(await readTextFile(jsonFile, { what: 'scripts/config.json' }), jsonShown);
  const known = new Set(conf.tasks.map((t) => t.name));
  for (const t of conf.tasks) {
    const entry = cj.tasks.get(t.name);
    if (!entry) {
      throw inputError(`taskname_map has no entry for task ${t.name} (${confShown}:${t.line})`, {
        file: jsonShown, line: cj.mapLine, hint: `add "${t.name}": ["${t.name}", ${t.isDag}] to taskname_map`,
      });
    }
    if (entry.isDag !== t.isDag) {
      throw inputError(`taskname_map says ${t.name} is ${entry.isDag ? 'a DAG task' : 'a non-DAG helper'}, but ${confShown}:${t.line} makes it ${t.isDag ? 'a DAG task' : 'a helper'}`, {
        file: jsonShown, line: entry.line, hint: `set the second element to ${t.isDag}; helpers are written "<name> 1 false <name>" in configuration.txt`,
      });
    }
  }
  for (const [task, entry] of cj.tasks) {
    if (!known.has(task)) throw inputError(`taskname_map names unknown task ${JSON.stringify(task)}`, { file: jsonShown, line: entry.line, hint: `tasks in configuration.txt: ${[...known].slice(0, 20).join(', ')}` });
  }
  for (const [task, line] of cj.execProfilerLines) {
    if (!known.has(task)) throw inputError(`exec_profiler names unknown task ${JSON.stringify(task)}`, { file: jsonShown, line, hint: `tasks in configuration.txt: ${[...known].slice(0, 20).join(', ')}` });
  }

  const scriptsDir = join(dir, 'scripts');
  const tasks: TaskSpec[] = [];
  for (const t of conf.tasks) {
    const entry = cj.tasks.get(t.name)!;
    const s = await resolveScript(dir, scriptsDir, entry.script, { task: t.name, isDag: t.isDag, file: jsonShown, line: entry.line });
    tasks.push({
      name: t.name, numInputs: t.numInputs, broadcast: t.broadcast, children: t.children, isDag: t.isDag,
      script: entry.script, scriptFile: s.scriptFile, language: s.language, args: entry.args,
      execProfiler: cj.execProfiler.get(t.name) ?? true, line: t.line,
    });
  }
  const shape = buildDag(name, tasks, confShown);

  let ports: AppSpec['ports'] = { docker: {}, service: {} };
  const iniFile = join(dir, 'app_config.ini');
  if (await isFile(iniFile)) ports = parseAppConfigIni(await readTextFile(iniFile, { allowEmpty: true, what: 'app_config.ini' }), displayPath(iniFile));

  const nameConvert: AppSpec['nameConvert'] = {};
  const ncFile = join(dir, 'name_convert.txt');
  if (await isFile(ncFile)) {
    const shown = displayPath(ncFile);
    for (const [task, e] of parseNameConvert(await readTextFile(ncFile, { what: 'name_convert.txt' }), shown)) {
      if (task !== 'input' && !known.has(task)) throw inputError(`unknown task ${JSON.stringify(task)}`, { file: shown, line: e.line, hint: 'first field is a task of configuration.txt, or `input` for the global input' });
      Object.defineProperty(nameConvert, task, { value: { output: e.output, input: e.input }, enumerable: true, writable: true, configurable: true });
    }
  }

  const inputNode: AppSpec['inputNode'] = {};
  const inputNodeLines: Record<string, number> = {};
  const inFile = join(dir, 'input_node.txt');
  if (await isFile(inFile)) {
    const shown = displayPath(inFile);
    for (const [task, e] of parseInputNode(await readTextFile(inFile, { what: 'input_node.txt' }), shown)) {
      if (!shape.entryTasks.includes(task)) {
        throw inputError(`${JSON.stringify(task)} is not an entry task`, { file: shown, line: e.line, hint: `input_node.txt names the node of an entry task: ${shape.entryTasks.join(', ')}` });
      }
      Object.defineProperty(inputNode, task, { value: e.node, enumerable: true, writable: true, configurable: true });
      inputNodeLines[task] = e.line;
    }
  }

  const staticPlacement: Record<string, string> = {};
  const placementLines: Record<string, number> = {};
  for (const p of conf.placement) {
    staticPlacement[p.task] = p.node;
    placementLines[p.task] = p.line;
  }

  const app: AppSpec = {
    name, dir, tasks,
    dagTasks: shape.dagTasks, entryTasks: shape.entryTasks, sinkTasks: shape.sinkTasks, graph: shape.graph,
    staticPlacement, ports, nameConvert, inputNode,
    sampleInputs: await sampleInputs(dir),
    extra: cj.extra,
    sourceLines: { staticPlacement: placementLines, inputNode: inputNodeLines },
  };
  const { graph: _graph, ...model } = app;
  const validate = validateModel();
  if (!validate(model)) {
    // Everything above should make this impossible: a failure is a bug in this loader.
    throw new Error(`internal: app model of ${name} fails its schema: ${errorsText(validate.errors)}`);
  }
  return app;
}
