// How every command reports failure: JupiterError -> its formatted message and exit code
// (2 bad input, 1 runtime failure); anything else is a bug and shows its stack.
import { isJupiterError } from '../../config/errors.js';

export function reportAndExit(e: unknown): never {
  if (isJupiterError(e)) {
    process.stderr.write(`jupiter: ${e.format()}\n`);
    process.exit(e.exitCode);
  }
  process.stderr.write(`jupiter: internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
}

/** Wrap a command action so that errors end the process with the right exit code. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void> | void): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (e) {
      reportAndExit(e);
    }
  };
}
