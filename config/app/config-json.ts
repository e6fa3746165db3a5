// scripts/config.json: taskname_map (task -> [script, is_dag, ...args]) and exec_profiler
// (task -> bool); other keys are kept as AppSpec.extra.
import { inputError } from '../errors.js';
import { lazyValidator } from '../schemas/ajv.js';
import { appConfigJsonSchema, type AppConfigJson } from '../schemas/app-config-json.js';
import { checkSchema, lineOfPointer, parseJsonText } from './json.js';

const validateConfigJson = lazyValidator<AppConfigJson>(appConfigJsonSchema);

export interface ScriptEntry {
  script: string;
  isDag: boolean;
  args: Array<string | number | boolean>;
  line: number;
}

export interface ParsedConfigJson {
  tasks: Map<string, ScriptEntry>;
  execProfiler: Map<string, boolean>;
  /** Line of each exec_profiler key, for messages. */
  execProfilerLines: Map<string, number>;
  extra: Record<string, unknown>;
  /** Line of the "taskname_map" key. */
  mapLine: number;
}

/** Parse and schema-check config.json text. `file` is only used in messages. */
export function parseConfigJson(text: string, file: string): ParsedConfigJson {
  const data = parseJsonText(text, file, 'scripts/config.json');
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw inputError('config.json must be a JSON object', { file, line: 1, hint: 'write {"taskname_map": {...}, "exec_profiler": {...}}' });
  }
  checkSchema(validateConfigJson(), data, text, file, 'taskname_map maps each task to ["script_basename", is_dag_task, ...args]; exec_profiler maps tasks to true/false');
  const tasks = new Map<string, ScriptEntry>();
  for (const [task, entry] of Object.entries(data.taskname_map)) {
    const [script, isDag, ...args] = entry;
    tasks.set(task, { script, isDag, args, line: lineOfPointer(text, `/taskname_map/${task.replace(/~/g, '~0').replace(/\//g, '~1')}`) });
  }
  const execProfiler = new Map<string, boolean>();
  const execProfilerLines = new Map<string, number>();
  for (const [task, on] of Object.entries(data.exec_profiler ?? {})) {
    execProfiler.set(task, on);
    execProfilerLines.set(task, lineOfPointer(text, `/exec_profiler/${task.replace(/~/g, '~0').replace(/\//g, '~1')}`));
  }
  // Object.fromEntries defines own properties, so a "__proto__" key stays plain data.
  const extra = Object.fromEntries(Object.entries(data).filter(([k]) => k !== 'taskname_map' && k !== 'exec_profiler'));
  return { tasks, execProfiler, execProfilerLines, extra, mapLine: lineOfPointer(text, '/taskname_map') };
}
