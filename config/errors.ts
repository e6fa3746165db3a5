// One error type for everything a user can get wrong (exit 2) or the world can break (exit 1).
// The CLI prints `file:line: message` followed by a hint, and never a stack trace for these.

export type ErrorKind = 'input' | 'runtime';

export interface ErrorLocation {
  file?: string;
  line?: number;
  hint?: string;
}

export class JupiterError extends Error {
  readonly kind: ErrorKind;
  readonly file?: string;
  readonly line?: number;
  readonly hint?: string;

  constructor(message: string, kind: ErrorKind, loc: ErrorLocation = {}, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'JupiterError';
    this.kind = kind;
    this.file = loc.file;
    this.line = loc.line;
    this.hint = loc.hint;
  }

  get exitCode(): number {
    return this.kind === 'input' ? 2 : 1;
  }

  /** `file:line: message` plus an indented hint line when there is one. */
  format(): string {
    const where = this.file ? `${this.file}${this.line ? `:${this.line}` : ''}: ` : '';
    return `${where}${this.message}${this.hint ? `\n  hint: ${this.hint}` : ''}`;
  }
}

/** Bad input from the user: exit code 2. */
export function inputError(message: string, loc: ErrorLocation = {}): JupiterError {
  return new JupiterError(message, 'input', loc);
}

/** A service, engine or process failed: exit code 1. */
export function runtimeError(message: string, loc: ErrorLocation = {}, cause?: unknown): JupiterError {
  return new JupiterError(message, 'runtime', loc, { cause });
}

export function isJupiterError(e: unknown): e is JupiterError {
  return e instanceof JupiterError;
}
