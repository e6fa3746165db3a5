// Output paths a task returns must lie inside its pathout: no `..`, no absolute path elsewhere,
// no symlink that leads out. Anything else could read or leak files of the runner's machine.
import { lstatSync } from 'node:fs';
import { realpath, lstat } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

export class OutputPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutputPathError';
  }
}

function inside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel);
}

/** Absolute, real paths of the returned outputs; throws OutputPathError for any escape. */
export async function checkOutputs(task: string, outputs: string[], pathout: string): Promise<string[]> {
  const root = resolve(pathout);
  // Fast path for the usual case, a regular file directly in pathout (and pathout still the
  // real folder the runner made): two lstat calls instead of resolving every path.
  if (outputs.every((p) => typeof p === 'string' && p !== '')) {
    const abs = outputs.map((p) => (isAbsolute(p) ? resolve(p) : resolve(root, p)));
    if (abs.every((a) => dirname(a) === root)) {
      try {
        if (lstatSync(root).isDirectory() && abs.every((a) => lstatSync(a).isFile())) return abs;
      } catch {
        // fall through to the full check, which explains what is wrong
      }
    }
  }
  const realRoot = await realpath(root);
  const out: string[] = [];
  for (const p of outputs) {
    if (typeof p !== 'string' || p === '') {
      throw new OutputPathError(`task ${task} returned ${JSON.stringify(p)} as an output path; expected a file path inside ${root}`);
    }
    const abs = isAbsolute(p) ? resolve(p) : resolve(root, p);
    if (!inside(root, abs) && !inside(realRoot, abs)) {
      throw new OutputPathError(`task ${task} returned output path ${p}, which is outside its pathout ${root}; outputs must be written into pathout`);
    }
    let real: string;
    try {
      real = await realpath(abs);
    } catch {
      throw new OutputPathError(`task ${task} returned output path ${p}, but no such file exists in ${root}`);
    }
    if (!inside(realRoot, real)) {
      throw new OutputPathError(`task ${task} returned output path ${p}, a link that leads outside its pathout ${root} (to ${real})`);
    }
    const st = await lstat(real);
    if (!st.isFile()) throw new OutputPathError(`task ${task} returned output path ${p}, which is not a regular file`);
    out.push(real);
  }
  return out;
}
