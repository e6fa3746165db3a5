// The real `jupiter` CLI from a bench, as a child process: its output, and its own progress lines
// (steps) shown indented under the bench's. Shared by the testbed benches.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const cli = join(repoRoot, 'bin', 'jupiter.js');

export function jupiter(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  return new Promise((res, rej) => {
    const c = spawn(process.execPath, [cli, ...args], { cwd, env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      // Steps, and the deploy's note of task times scaled by earlier deployments (calibration).
      for (const l of d.toString().split('\n')) if (/^([✔✖]|task times scaled)/.test(l.trim())) process.stderr.write(`         ${l.trim()}\n`);
    });
    c.on('exit', (code) => (code === 0 ? res(out) : rej(new Error(`jupiter ${args.join(' ')} exited ${code}\n${out}\n${err}`))));
  });
}

const T0 = performance.now();

/** A bench's progress line on stderr, stamped with seconds since the bench started. */
export const log = (m: string): void => {
  process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(0).padStart(4)} s] ${m}\n`);
};

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export const median = (xs: number[]): number => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Write a bench's JSON results and the chart drawn from them beside it (same name, .svg). */
export function writeResults(file: string, out: unknown, svg: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
  writeFileSync(file.replace(/\.json$/, '.svg'), svg);
  log(`wrote ${file} and .svg`);
}
