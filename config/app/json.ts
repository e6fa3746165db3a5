// JSON files with line numbers in messages: syntax errors point at the line of the bad token,
// schema errors at the line of the offending key.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { inputError } from '../errors.js';

function lineOfOffset(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** JSON.parse with `file:line` on syntax errors. */
export function parseJsonText(text: string, file: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    let line = 1;
    const pos = /at position (\d+)/.exec(msg);
    const lc = /\(line (\d+) column \d+\)/.exec(msg);
    if (lc) line = Number(lc[1]);
    else if (pos) line = lineOfOffset(text, Number(pos[1]));
    else if (/Unexpected end of JSON input/.test(msg)) line = lineOfOffset(text, text.length);
    const short = msg.replace(/, "[\s\S]*" is not valid JSON$/, '').replace(/ in JSON at position \d+.*$/, '');
    throw inputError(`invalid JSON: ${short}`, { file, line, hint: `${what} must be valid JSON (check commas, quotes and brackets near this line)` });
  }
}

/** Line of the key at a JSON pointer (`/taskname_map/task3/1`), best effort: 1 when not found. */
export function lineOfPointer(text: string, pointer: string): number {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let from = 0;
  for (const p of parts) {
    if (/^\d+$/.test(p)) continue; // array index: stay at the array's key
    const at = text.indexOf(JSON.stringify(p), from);
    if (at < 0) break;
    from = at;
  }
  return lineOfOffset(text, from);
}

function describe(err: ErrorObject): string {
  const where = err.instancePath === '' ? 'the top level' : err.instancePath.slice(1).replace(/\//g, '.');
  if (err.keyword === 'additionalProperties') return `${where}: unknown key ${JSON.stringify((err.params as { additionalProperty: string }).additionalProperty)}`;
  if (err.keyword === 'enum') return `${where} must be one of ${(err.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${where} ${err.message ?? 'is invalid'}`;
}

/** Run an ajv validator and turn its first error into an inputError at the offending line. */
export function checkSchema<T>(validate: ValidateFunction<T>, data: unknown, text: string, file: string, hint: string): asserts data is T {
  if (validate(data)) return;
  const errs = validate.errors ?? [];
  // Prefer the most specific error (deepest path): anyOf/oneOf wrappers say little.
  const err = [...errs].sort((a, b) => b.instancePath.length - a.instancePath.length)[0];
  if (!err) throw inputError('does not match its schema', { file, line: 1, hint });
  let pointer = err.instancePath;
  if (err.keyword === 'additionalProperties') pointer += `/${(err.params as { additionalProperty: string }).additionalProperty}`;
  throw inputError(describe(err), { file, line: lineOfPointer(text, pointer), hint });
}
