// Fetching a blob from the node that holds it. A node that cannot be reached (a failed link, a
// partition, a runner restarting) is asked again with backoff for up to `patienceMs`, so a
// receiver rides out an outage of that long; a node that answers but lacks the blob, or refuses
// the token, is an error at once.
import { Agent, request } from 'node:http';

export class BlobMissingError extends Error {
  constructor(msg: string) {
    super(msg);
    this.name = 'BlobMissingError';
  }
}

// Connections to a node are kept open: a 1 MiB fetch over a fresh connection pays a handshake
// and TCP slow start each time.
const agent = new Agent({ keepAlive: true, maxSockets: 16 });

export interface FetchOptions {
  token: string;
  /** Largest answer accepted (the pipeline's blob size limit). */
  maxBytes: number;
  /** Give up on one attempt after this long without progress (ms). */
  timeoutMs: number;
  /**
   * Called once when the rest of the body should be in within OVERLAP_MS at the rate seen so far
   * (or the attempt ended): the caller may start its next transfer from the same node then, so
   * that the next request's round trip and the sender's turn (its event loop may be running a
   * task) overlap this transfer's tail instead of leaving the link idle between them. Bounded in
   * time, not in bytes: on a slow link two transfers share it for a moment only.
   */
  onTail?: () => void;
  /** Ends the attempt early (the node was found dead meanwhile). */
  signal?: AbortSignal;
  /** Called as bytes come in (the caller tells a stalled attempt from a slow one). */
  onData?: () => void;
}

/**
 * Bodies of fetched blobs are read into buffers kept for reuse: a fresh 1 MiB buffer costs ~0.75
 * ms of CPU in page faults on the testbed's VM (a copy into a warm one ~0.04 ms), and a runner
 * fetches one per item. The owner of a body gives it back (releaseBody) once it is written to
 * the task's input file; a body nobody gives back is collected as usual. Only buffers made here
 * are taken back, at most POOL_KEPT of them, and a kept one serves sizes down to half its own.
 */
const POOL_KEPT = 4;
const pool: ArrayBuffer[] = [];
const made = new WeakSet<ArrayBuffer>();

function takeBody(length: number): Buffer {
  const i = pool.findIndex((ab) => ab.byteLength >= length && ab.byteLength <= 2 * length);
  if (i >= 0) return Buffer.from(pool.splice(i, 1)[0]!, 0, length);
  const ab = new ArrayBuffer(length);
  made.add(ab);
  return Buffer.from(ab, 0, length);
}

/**
 * Give back the body of a fetch (a no-op for any other buffer): the caller must not use it, or
 * any view of it, afterwards.
 */
export function releaseBody(body: Buffer): void {
  const ab = body.buffer as ArrayBuffer;
  if (!made.has(ab) || pool.includes(ab) || ab.byteLength < 64 * 1024) return;
  if (pool.length >= POOL_KEPT) pool.shift();
  pool.push(ab);
}

/** How long before a transfer's end the next one from the same node is asked for (ms). */
export const OVERLAP_MS = 30;

/** One GET of a blob from one endpoint (`host:port`). Network errors reject with `code`. */
export function getBlob(endpoint: string, id: string, opts: FetchOptions): Promise<Buffer> {
  const colon = endpoint.lastIndexOf(':');
  let tailSaid = false;
  const tail = (): void => {
    if (tailSaid) return;
    tailSaid = true;
    opts.onTail?.();
  };
  const asked = performance.now();
  return new Promise<Buffer>((resolve, reject) => {
    const req = request({
      host: endpoint.slice(0, colon), port: Number(endpoint.slice(colon + 1)), path: `/blob/${id}`, method: 'GET', agent,
      headers: { authorization: `Bearer ${opts.token}` }, timeout: opts.timeoutMs, signal: opts.signal,
    }, (res) => {
      const length = Number(res.headers['content-length']);
      if (res.statusCode === 200 && Number.isSafeInteger(length) && length >= 0) {
        if (length > opts.maxBytes) {
          req.destroy(new Error(`blob ${id} from ${endpoint} is over ${opts.maxBytes} bytes`));
          return;
        }
        // The size is known: the chunks go straight into one buffer of that size (no list of
        // chunks and no second copy to join them).
        const body = takeBody(length);
        let n = 0;
        res.on('data', (c: Buffer) => {
          if (n + c.length > length) {
            req.destroy(new Error(`blob ${id} from ${endpoint}: more bytes than its announced ${length}`));
            return;
          }
          c.copy(body, n);
          n += c.length;
          opts.onData?.();
          // The rate counts from the asking: an estimate on the slow side, so the tail starts early rather than late.
          if (!tailSaid && (length - n) * (performance.now() - asked) <= OVERLAP_MS * n) tail();
        });
        res.on('end', () => {
          tail();
          if (n === length) resolve(body);
          else reject(Object.assign(new Error(`blob ${id} from ${endpoint} ended after ${n} of ${length} bytes`), { code: 'ECONNRESET' }));
        });
        res.on('error', reject);
        return;
      }
      const chunks: Buffer[] = [];
      let n = 0;
      res.on('data', (c: Buffer) => {
        n += c.length;
        if (n > opts.maxBytes) {
          req.destroy(new Error(`blob ${id} from ${endpoint} is over ${opts.maxBytes} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => {
        tail();
        const body = Buffer.concat(chunks);
        if (res.statusCode === 200) resolve(body);
        else if (res.statusCode === 404) reject(new BlobMissingError(`node at ${endpoint} does not hold blob ${id}`));
        else reject(new BlobMissingError(`node at ${endpoint} refused blob ${id}: ${res.statusCode} ${body.toString().trim()}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer from ${endpoint} within ${opts.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    // A failed attempt does not release the lane itself: the fetch that made it first looks
    // whether the node is dead (plane.ts), so that the next fetch in the lane does not wait out
    // the same silence.
    req.on('error', reject);
    req.end();
  });
}
