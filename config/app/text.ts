// Reading the small text files of an app folder or cluster configuration safely:
// size is checked before reading (a 10 MB configuration.txt is refused without loading it),
// and empty, binary or non-UTF-8 content is refused with the line of the first bad byte.
import { open, stat } from 'node:fs/promises';
import { relative, isAbsolute } from 'node:path';
import { inputError } from '../errors.js';

/** Largest configuration file we read (configuration.txt, config.json, ini, nodes.txt...). */
export const MAX_CONFIG_BYTES = 1024 * 1024;
/** Largest task script we scan for a `task` definition. */
export const MAX_SCRIPT_BYTES = 5 * 1024 * 1024;

/** How a path is shown in messages: relative to the working directory when inside it. */
export function displayPath(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

/** Byte offset of the first invalid UTF-8 sequence, or -1 when the buffer is valid UTF-8. */
export function firstInvalidUtf8(buf: Uint8Array): number {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) { i++; continue; }
    let need: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) { need = 1; min = 0x80; }
    else if (b >= 0xe0 && b <= 0xef) { need = 2; min = 0x800; }
    else if (b >= 0xf0 && b <= 0xf4) { need = 3; min = 0x10000; }
    else return i;
    let cp = b & (0xff >> (need + 2));
    for (let k = 1; k <= need; k++) {
      const c = buf[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
    i += need + 1;
  }
  return -1;
}

function lineAt(buf: Uint8Array, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < buf.length; i++) if (buf[i] === 0x0a) line++;
  return line;
}

/**
 * Decode file content as UTF-8 text, refusing binary (NUL bytes), invalid UTF-8 and, unless
 * allowEmpty, files with nothing but white space. A leading byte-order mark is dropped.
 */
export function decodeText(buf: Uint8Array, file: string, opts: { allowEmpty?: boolean; what?: string } = {}): string {
  const what = opts.what ?? 'this file';
  const nul = buf.indexOf(0);
  if (nul >= 0) {
    throw inputError('binary content (NUL byte); expected a text file', {
      file, line: lineAt(buf, nul), hint: `${what} must be plain UTF-8 text`,
    });
  }
  const bad = firstInvalidUtf8(buf);
  if (bad >= 0) {
    throw inputError(`not valid UTF-8 text (byte 0x${buf[bad]!.toString(16).padStart(2, '0')} at offset ${bad})`, {
      file, line: lineAt(buf, bad), hint: `save ${what} as UTF-8`,
    });
  }
  let text = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength).toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (!opts.allowEmpty && text.trim() === '') {
    throw inputError('file is empty', { file, line: 1, hint: `${what} must not be empty` });
  }
  return text;
}

/**
 * Read a text file with a size limit checked before reading, then decodeText().
 * `file` is the real path; messages show displayPath(file).
 */
export async function readTextFile(file: string, opts: { maxBytes?: number; allowEmpty?: boolean; what?: string } = {}): Promise<string> {
  const shown = displayPath(file);
  const max = opts.maxBytes ?? MAX_CONFIG_BYTES;
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw inputError(code === 'ENOENT' ? 'file not found' : `cannot read file (${code ?? String(e)})`, {
      file: shown, hint: opts.what ? `${opts.what} is required` : undefined,
    });
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw inputError('not a regular file', { file: shown });
    if (st.size > max) {
      throw inputError(`file is too large (${st.size} bytes, the limit is ${max})`, {
        file: shown, hint: `${opts.what ?? 'this file'} should be small; is it the right file?`,
      });
    }
    // Read at most max+1 bytes: the file may grow between stat and read.
    const buf = Buffer.alloc(Math.min(st.size, max) + 1);
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    if (bytesRead > max) throw inputError(`file is too large (more than ${max} bytes)`, { file: shown });
    return decodeText(buf.subarray(0, bytesRead), shown, opts);
  } finally {
    await handle.close();
  }
}

/** Split text into lines, accepting LF, CRLF and lone CR. */
export function splitLines(text: string): string[] {
  return text.split(/\r\n|\r|\n/);
}

/** Whitespace-separated fields of a line (spaces or tabs, leading/trailing ignored). */
export function fieldsOf(line: string): string[] {
  const t = line.trim();
  return t === '' ? [] : t.split(/[ \t\f\v]+/);
}

/** A blank line or a `#` comment. */
export function isSkippable(line: string): boolean {
  const t = line.trim();
  return t === '' || t.startsWith('#');
}

export interface ContentLine {
  /** 1-based line number in the file. */
  line: number;
  raw: string;
  fields: string[];
}

/** The lines of a line-oriented file that carry content (no blanks, no comments), split into fields. */
export function contentLines(text: string): ContentLine[] {
  return splitLines(text).flatMap((raw, i) => (isSkippable(raw) ? [] : [{ line: i + 1, raw, fields: fieldsOf(raw) }]));
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

export async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
