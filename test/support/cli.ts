// Run the real CLI as a child process (from the build) and capture what it prints.
import { spawn } from 'node:child_process';
import { cliPath, repoRoot } from './paths.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<CliResult> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], {
      cwd: opts.cwd ?? repoRoot,
      env: { ...process.env, NO_COLOR: '1', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      // JUPITER_TEST_TRACE=1: every CLI run with its time and what it printed (where a slow test goes).
      if (process.env.JUPITER_TEST_TRACE) console.log(`      $ jupiter ${args.join(' ')}  (exit ${code}, ${Date.now() - t0} ms)\n${`${stdout}${stderr}`.replace(/^/gm, '      | ')}`);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}
