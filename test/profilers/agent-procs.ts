// Real agents as child processes of the built CLI (`bin/jupiter.js agent ...`), optionally
// inside a network namespace (argv prefix `ip netns exec <ns>`).
import { spawn, type ChildProcess } from 'node:child_process';
import { cliPath, repoRoot } from '../support/paths.js';

export interface AgentProc {
  node: string;
  child: ChildProcess;
  /** Everything the agent printed (stderr). */
  log(): string;
  /** Send a signal and wait for the process to exit (SIGKILL after graceMs). */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<void>;
}

export function spawnAgent(node: string, args: string[], opts: { prefix?: string[]; env?: NodeJS.ProcessEnv } = {}): AgentProc {
  const argv = [...(opts.prefix ?? []), process.execPath, cliPath, 'agent', '--node', node, ...args];
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: '1', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    node,
    child,
    log: () => text,
    async stop(signal = 'SIGTERM', graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
