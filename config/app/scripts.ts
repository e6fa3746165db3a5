// Task scripts: find scripts/<basename>.{py,mjs,js,ts,sh} and check, by reading the source (never
// running it), that a DAG task's script defines `task`: Python a top-level `def task(`,
// JavaScript/TypeScript an exported `task`.
import { realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { inputError } from '../errors.js';
import { SAFE_NAME, type ScriptLanguage } from '../types.js';
import { displayPath, isFile, MAX_SCRIPT_BYTES, readTextFile } from './text.js';

export const SCRIPT_EXTENSIONS: ReadonlyArray<readonly [string, ScriptLanguage]> = [
  ['.py', 'python'], ['.mjs', 'javascript'], ['.js', 'javascript'], ['.ts', 'typescript'], ['.sh', 'shell'],
];

export interface ResolvedScript {
  scriptFile: string;
  language: ScriptLanguage;
}

interface Where {
  task: string;
  isDag: boolean;
  /** config.json as shown in messages, and the line of the task's taskname_map entry. */
  file: string;
  line: number;
}

/** Comments removed (roughly: enough that a commented-out `export function task` does not count). */
function stripComments(src: string, language: ScriptLanguage): string {
  if (language === 'python') return src.replace(/^[ \t]*#.*$/gm, '');
  return src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** Whether the source defines the task entry point for its language. */
export function definesTask(source: string, language: ScriptLanguage): boolean {
  const src = stripComments(source, language);
  if (language === 'python') return /^(?:async[ \t]+)?def[ \t]+task[ \t]*\(/m.test(src);
  if (language === 'shell') return false;
  return (
    /\bexport[ \t]+(?:async[ \t]+)?function[ \t]*\*?[ \t]*task[ \t]*[(<]/.test(src) ||
    /\bexport[ \t]+(?:const|let|var)[ \t]+task\b/.test(src) ||
    /\bexport[ \t]*\{[^}]*?(?:^|[\s,{])(?:[A-Za-z_$][\w$]*[ \t]+as[ \t]+)?task[ \t]*(?:,|\}|$)/m.test(src) ||
    /\bexports\.task[ \t]*=/.test(src) ||
    /\bmodule\.exports[ \t]*=[ \t]*\{[^}]*\btask\b/.test(src)
  );
}

/** Find the script of a task in scriptsDir and check it (exists, is text, defines `task`). */
export async function resolveScript(appDir: string, scriptsDir: string, script: string, where: Where): Promise<ResolvedScript> {
  const { task, isDag, file, line } = where;
  const parts = script.split('/');
  if (parts.some((p) => !SAFE_NAME.test(p))) {
    throw inputError(`script name ${JSON.stringify(script)} of ${task} is not allowed`, {
      file, line, hint: "give the script's basename inside scripts/ (letters, digits, '_', '.', '-'; '/' for sub-folders; no '..')",
    });
  }
  const explicit = SCRIPT_EXTENSIONS.find(([ext]) => script.endsWith(ext));
  const candidates = explicit ? [explicit] : SCRIPT_EXTENSIONS;
  const found: Array<readonly [string, ScriptLanguage]> = [];
  for (const c of candidates) {
    const path = join(scriptsDir, explicit ? script : script + c[0]);
    if (await isFile(path)) found.push([path, c[1]]);
  }
  if (found.length === 0) {
    throw inputError(`script of ${task} not found: scripts/${script}${explicit ? '' : '.{py,mjs,js,ts,sh}'}`, {
      file, line, hint: `create scripts/${explicit ? script : `${script}.py`} (or fix the name in taskname_map)`,
    });
  }
  if (found.length > 1) {
    throw inputError(`script of ${task} is ambiguous: ${found.map(([p]) => displayPath(p)).join(' and ')}`, {
      file, line, hint: 'keep one of them, or give the extension in taskname_map',
    });
  }
  const [scriptFile, language] = found[0]!;
  // A symlink must not lead outside the app folder (the folder is what gets shipped to nodes).
  const real = await realpath(scriptFile);
  const realApp = await realpath(appDir);
  if (!real.startsWith(realApp + sep)) {
    throw inputError(`script of ${task} leads outside the app folder (${real})`, { file: displayPath(scriptFile), hint: 'copy the script into scripts/ instead of linking to it' });
  }
  const source = await readTextFile(scriptFile, { maxBytes: MAX_SCRIPT_BYTES, what: `the script of ${task}` });
  if (isDag) {
    if (language === 'shell') {
      throw inputError(`DAG task ${task} has a shell script; only non-DAG helpers can be shell scripts`, {
        file: displayPath(scriptFile), hint: 'write the task in Python (def task(filename, pathin, pathout)) or JavaScript/TypeScript (export function task(inputs, pathin, pathout))',
      });
    }
    if (!definesTask(source, language)) {
      throw inputError(`script of ${task} does not define ${language === 'python' ? 'a top-level def task(...)' : 'an exported task function'}`, {
        file: displayPath(scriptFile), line: 1,
        hint: language === 'python'
          ? 'add `def task(filename, pathin, pathout):` returning the list of output paths'
          : 'add `export async function task(inputs, pathin, pathout) { ... return outputPaths; }`',
      });
    }
  }
  return { scriptFile, language };
}
