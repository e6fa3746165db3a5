// Docker's streaming JSON progress (build, import) as a promise, with masked messages.
import type Docker from 'dockerode';
import { runtimeError } from '../../config/errors.js';

export interface ProgressEvent {
  stream?: string;
  status?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { ID?: string };
}

/** Hide the password of any URL (redis://user:secret@host -> redis://user:***@host). */
export function maskSecrets(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/\s:@]*):([^@\s/]*)@/gi, '$1$2:***@');
}

/**
 * Wait for a progress stream to end; every non-empty message goes to onLine.
 * Rejects with the engine's error text when an event carries an error (failed build step).
 */
export function followProgress(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  onLine: (line: string) => void,
): Promise<ProgressEvent[]> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null, output: ProgressEvent[]) => {
        if (err) return reject(runtimeError(`Docker engine: ${maskSecrets(err.message)}`, {}, err));
        const failed = output.find((e) => e.error);
        if (failed) {
          const msg = failed.errorDetail?.message ?? failed.error ?? 'unknown error';
          return reject(runtimeError(`Docker engine: ${maskSecrets(msg)}`));
        }
        resolve(output);
      },
      (e: ProgressEvent) => {
        const line = (e.stream ?? e.status ?? '').trim();
        if (line) onLine(maskSecrets(line));
      },
    );
  });
}
