// Names and ids of the items and jobs that travel through the queues.
import { createHash } from 'node:crypto';

// Jupiter's naming rule (job id = name before the first `_`, else before the first `.`) lives in
// config; kept for compatibility and for item ids, while routing uses the explicit item id.
export { jobPrefix } from '../../config/app/job.js';

/** What a queue job carries: never the bytes themselves, only a reference to the blob. */
export interface ItemJob {
  /** Stream item the file belongs to. */
  item: string;
  /** File name as the receiving task will see it in its pathin. */
  name: string;
  /** Blob id (bytes under AppKeys.blob(id)). */
  blob: string;
  /** Sending task, or `home` for the source. */
  from: string;
  /** Bytes. */
  size: number;
}

function sha1(parts: string[]): string {
  return createHash('sha1').update(parts.join('\u0000')).digest('hex');
}

/**
 * Deterministic job id of one file sent from `from` to `to` (BullMQ ids may not contain `:`).
 * A redelivered sender re-adds the same ids, so the copies are recognised downstream.
 */
export function jobIdFor(item: string, from: string, name: string, to: string, index: number): string {
  return `j${sha1([item, from, name, to, String(index)])}`;
}

/** Deterministic blob id of one output of one task for one item (shared by all its receivers). */
export function blobIdFor(item: string, from: string, name: string): string {
  return sha1(['blob', item, from, name]);
}
