// The system commands the testbed drives (ip, tc, iptables, nsenter), with their stderr in the
// error when they fail. Synchronous: each is a few milliseconds, and order matters.
import { execFileSync } from 'node:child_process';
import { runtimeError } from '../../config/errors.js';

/** Run a command; `input` goes to its stdin (tc -batch). */
export function run(cmd: string, args: string[], input?: string): string {
  try {
    return execFileSync(cmd, args, input === undefined ? { stdio: ['ignore', 'pipe', 'pipe'] } : { input, stdio: ['pipe', 'pipe', 'pipe'] }).toString();
  } catch (e) {
    const err = (e as { stderr?: Buffer }).stderr?.toString().trim() || (e as Error).message;
    throw runtimeError(`${cmd} ${args.join(' ')} failed: ${err}`, {}, e);
  }
}

/** Like run, for clean-up: failures (already gone) are ignored; true when it succeeded. */
export function tryRun(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export const ip = (...args: string[]): string => run('ip', args);

/**
 * The argv prefix that runs a command in a host's namespace: nsenter --net only, not
 * `ip netns exec`, which remounts /sys and hides the cgroups dockerd needs.
 */
export function nsWrap(ns: string): string[] {
  return ['nsenter', `--net=/var/run/netns/${ns}`];
}

/** Run a command in a namespace; `input` goes to its stdin. */
export function inNs(ns: string, cmd: string, ...args: string[]): string {
  const [wrap, ...pre] = nsWrap(ns);
  return run(wrap!, [...pre, cmd, ...args]);
}

export function tryInNs(ns: string, cmd: string, ...args: string[]): boolean {
  const [wrap, ...pre] = nsWrap(ns);
  return tryRun(wrap!, [...pre, cmd, ...args]);
}
