// Names and ids of the items and jobs that travel through the queues.
import { createHash } from 'node:crypto';

// Jupiter's naming rule (job id = name before the first `_`, else before the first `.`) lives in
// config; kept for compatibility and for item ids, while routing uses the explicit item id.
export { jobPrefix } from '../../config/app/job.js';

/**
 * One file on its way to one task (or to the sink): the unit runners and the sink handle. It
 * carries a reference to the blob, and a small file's bytes too (`inline`), so that a receiver
 * needs no round trip to fetch them.
 */
export interface Delivery {
  /** Deterministic id (deliveryIdFor): the item's in-flight set and the blob's holders name it. */
  id: string;
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
  /**
   * Direct data path: the node that keeps the bytes (the blob record then holds only a pointer);
   * the receiver fetches them from there (circe/dataplane).
   */
  src?: string;
  /** Attempts this delivery already used (a retried delivery travels alone, delayed). */
  tries?: number;
  /** The bytes, base64, when the file is at most INLINE_MAX bytes (the blob holds them too). */
  inline?: string;
  /**
   * Sent again (an outbox re-sent after its sender died, or split from a job whose runner died):
   * it may be a copy of one already handled, so the receiver looks before it runs the task.
   */
  resent?: boolean;
}

/** Files up to this size travel inside their deliveries too (the round trip costs more than the copy). */
export const INLINE_MAX = 4096;

/**
 * Files larger than this are written and read beside the scripts (a plain SET or GET on the same
 * connection, in the same round trip), never through them: Lua copies a string argument or reply
 * several times, about 2.5 ms of Redis CPU per MiB against 0.3-0.9 ms for GET and SET, and Redis
 * is the one thread every item's bytes pass through.
 */
export const LUA_BYTES_MAX = 64 * 1024;

/** The delivery's bytes, base64, when they may travel inline. */
export function inlineBytes(bytes: Buffer): string | undefined {
  return bytes.length <= INLINE_MAX ? bytes.toString('base64') : undefined;
}

/**
 * What a BullMQ job carries: deliveries to one task. A sender's group commit (the items that
 * finished while its previous commit was in flight) travels as one job, so the queue's own
 * per-job cost is shared by every item of a busy stream, while a quiet stream sends jobs of one.
 */
export interface BundleJob {
  d: Delivery[];
}

/** Most deliveries per job (and per arrive or commit call of a runner). */
export const BUNDLE_MAX = 64;

function sha1(parts: string[]): string {
  return createHash('sha1').update(parts.join('\u0000')).digest('hex');
}

/**
 * Deterministic id of one file sent from `from` to `to` (also a valid BullMQ job id: no `:`).
 * A redelivered sender re-sends the same ids, so the copies are recognised downstream.
 */
export function deliveryIdFor(item: string, from: string, name: string, to: string, index: number): string {
  return `j${sha1([item, from, name, to, String(index)])}`;
}

/** Deterministic blob id of one output of one task for one item (shared by all its receivers). */
export function blobIdFor(item: string, from: string, name: string): string {
  return sha1(['blob', item, from, name]);
}

/**
 * Job id of a bundle: a single delivery keeps its own id (so BullMQ drops a re-add while the
 * first copy still waits); a bundle is named after its deliveries.
 */
export function bundleIdFor(d: Delivery[]): string {
  return d.length === 1 ? d[0]!.id : `b${sha1(d.map((x) => x.id))}`;
}
