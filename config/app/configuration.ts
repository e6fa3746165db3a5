// configuration.txt: line 1 is N, then N task lines `<task> <NUM_INPUTS> <FLAG> <child>...`,
// then optional static placement lines `<task> <node>`. Blank lines and `#` comments are skipped,
// fields may be separated by spaces or tabs, CRLF and trailing spaces are fine.
// This module only checks each line on its own; graph rules (unknown child, cycles, joins) are in dag.ts.
import { inputError } from '../errors.js';
import { HOME, SAFE_NAME } from '../types.js';
import { contentLines } from './text.js';

/** Longest task or node name: they become queue, container and file names. */
export const MAX_NAME_LENGTH = 64;
/** Upper bound for NUM_INPUTS and N: more is certainly a typo. */
export const MAX_TASKS = 10_000;

export interface TaskLine {
  name: string;
  numInputs: number;
  broadcast: boolean;
  children: string[];
  /** false for the `<name> 1 false <name>` helper form. */
  isDag: boolean;
  line: number;
}

export interface PlacementLine {
  task: string;
  node: string;
  line: number;
}

export interface ParsedConfiguration {
  declared: number;
  declaredLine: number;
  tasks: TaskLine[];
  placement: PlacementLine[];
}

const TASK_FORM = '<task> <NUM_INPUTS> <FLAG> <child>...';

/** Throws unless `name` is usable as a queue, container and file name. */
export function checkName(name: string, what: string, file: string, line: number): void {
  if (!SAFE_NAME.test(name) || name.length > MAX_NAME_LENGTH) {
    throw inputError(`${what} name ${JSON.stringify(name)} is not allowed`, {
      file, line,
      hint: `use letters, digits, '_', '.', '-' (starting with a letter or digit, at most ${MAX_NAME_LENGTH} characters); names become queue, container and file names`,
    });
  }
}

function parseTaskLine(f: string[], file: string, line: number): TaskLine {
  const [name, num, flag, ...children] = f as [string, string, string, ...string[]];
  checkName(name, 'task', file, line);
  if (name === HOME) {
    throw inputError(`"${HOME}" is reserved and cannot be a task name`, { file, line, hint: `"${HOME}" as a child marks a sink; rename the task` });
  }
  if (!/^\d+$/.test(num) || Number(num) < 1 || Number(num) > MAX_TASKS) {
    throw inputError(`NUM_INPUTS of ${name} must be a whole number >= 1, got ${JSON.stringify(num)}`, {
      file, line, hint: `a task line is ${TASK_FORM}; NUM_INPUTS is how many files of one job the task waits for (1 for a task with one parent)`,
    });
  }
  const lower = flag.toLowerCase();
  if (lower !== 'true' && lower !== 'false') {
    throw inputError(`FLAG of ${name} must be true or false, got ${JSON.stringify(flag)}`, {
      file, line, hint: 'true: every output goes to every child; false: the i-th output goes to the i-th child',
    });
  }
  if (children.length === 0) {
    throw inputError(`task ${name} has no children`, { file, line, hint: `list its children, or "${HOME}" to send its outputs back to the home (a sink)` });
  }
  const seen = new Set<string>();
  for (const c of children) {
    if (c !== HOME) checkName(c, 'child', file, line);
    if (seen.has(c)) throw inputError(`task ${name} lists child ${c} twice`, { file, line, hint: 'list each child once' });
    seen.add(c);
  }
  const numInputs = Number(num);
  const broadcast = lower === 'true';
  const isDag = !(children.length === 1 && children[0] === name);
  if (!isDag && (numInputs !== 1 || broadcast)) {
    throw inputError(`task ${name} lists itself as its child`, {
      file, line, hint: `a non-DAG helper task is written exactly "${name} 1 false ${name}"; otherwise remove the self-loop`,
    });
  }
  return { name, numInputs, broadcast, children, isDag, line };
}

/** Parse configuration.txt text. `file` is only used in messages. */
export function parseConfiguration(text: string, file: string): ParsedConfiguration {
  let declared = -1;
  let declaredLine = 0;
  const tasks: TaskLine[] = [];
  const placement: PlacementLine[] = [];
  const taskLineOf = new Map<string, number>();
  for (const { line, raw, fields: f } of contentLines(text)) {
    if (declared < 0) {
      if (f.length !== 1 || !/^\d+$/.test(f[0]!) || Number(f[0]) > MAX_TASKS) {
        throw inputError(`the first line must be the number of tasks N, got ${JSON.stringify(raw.trim().slice(0, 60))}`, {
          file, line, hint: `start configuration.txt with N, then N lines ${TASK_FORM}`,
        });
      }
      declared = Number(f[0]);
      declaredLine = line;
      if (declared === 0) throw inputError('N is 0: the app has no tasks', { file, line, hint: 'an app needs at least one task' });
      continue;
    }
    if (f.length >= 3) {
      if (placement.length > 0) {
        throw inputError('task line after a static placement line', {
          file, line, hint: 'write all N task lines first, then the optional `<task> <node>` placement lines',
        });
      }
      const t = parseTaskLine(f, file, line);
      if (tasks.length === declared) {
        throw inputError(`more task lines than N = ${declared} (line ${declaredLine})`, {
          file, line, hint: `set line ${declaredLine} to the number of task lines, or remove the extra line`,
        });
      }
      const first = taskLineOf.get(t.name);
      if (first !== undefined) {
        throw inputError(`duplicate task ${t.name} (first defined on line ${first})`, { file, line, hint: 'each task is defined by exactly one line' });
      }
      taskLineOf.set(t.name, line);
      tasks.push(t);
    } else if (f.length === 2) {
      if (tasks.length !== declared) {
        throw inputError(`N is ${declared} (line ${declaredLine}) but ${tasks.length} task line(s) come before this line`, {
          file, line,
          hint: /^\d+$/.test(f[1]!) ? `a task line is ${TASK_FORM}: FLAG and children are missing` : `set N to the number of task lines; \`<task> <node>\` placement lines come after all task lines`,
        });
      }
      const [task, node] = f as [string, string];
      checkName(node, 'node', file, line);
      if (!taskLineOf.has(task)) {
        throw inputError(`static placement names unknown task ${JSON.stringify(task)}`, {
          file, line, hint: `known tasks: ${[...taskLineOf.keys()].slice(0, 20).join(', ')}`,
        });
      }
      const dup = placement.find((p) => p.task === task);
      if (dup) throw inputError(`task ${task} is placed twice (first on line ${dup.line})`, { file, line, hint: 'give one `<task> <node>` line per task' });
      placement.push({ task, node, line });
    } else {
      throw inputError(`cannot read line ${JSON.stringify(raw.trim().slice(0, 60))}`, {
        file, line, hint: `task lines are ${TASK_FORM}; placement lines are <task> <node>`,
      });
    }
  }
  if (declared < 0) throw inputError('file has no content', { file, line: 1, hint: `start with N, then N lines ${TASK_FORM}` });
  if (tasks.length !== declared) {
    throw inputError(`N is ${declared} but there are ${tasks.length} task line(s)`, {
      file, line: declaredLine, hint: `set line ${declaredLine} to ${tasks.length}, or add the missing task lines`,
    });
  }
  return { declared, declaredLine, tasks: tasks.map((t) => withSinkAliases(t, taskLineOf)), placement };
}

/**
 * Later Jupiter versions name the sink `datasink1` (streaming variants) and standalone CIRCE
 * `scheduler`: as a child that is not a task of the file, either means the home, as `home` does.
 */
export const SINK_ALIAS = /^(datasink\d*|scheduler)$/;

function withSinkAliases(t: TaskLine, defined: Map<string, number>): TaskLine {
  if (!t.isDag || !t.children.some((c) => SINK_ALIAS.test(c) && !defined.has(c))) return t;
  const children: string[] = [];
  for (const c of t.children) {
    const to = SINK_ALIAS.test(c) && !defined.has(c) ? HOME : c;
    if (!children.includes(to)) children.push(to);
  }
  return { ...t, children };
}
