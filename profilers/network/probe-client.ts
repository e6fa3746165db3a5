// One DRUPE probe: POST `bytes` random bytes to a peer's probe endpoint over a fresh TCP
// connection and time the whole transfer (connect, send, the peer's answer after the last
// byte), like DRUPE timed a whole scp. Random payload, so no compression anywhere helps.
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';

let payload = Buffer.alloc(0);

function payloadOf(bytes: number): Buffer {
  if (payload.length < bytes) payload = randomBytes(bytes);
  return payload.subarray(0, bytes);
}

/**
 * A probe that did not finish in time. On a link the stream saturates (a queue seconds deep) every
 * probe ends like this, and that is evidence too: the link took at least `afterSec` for `bytes`.
 */
export class ProbeTimeoutError extends Error {
  constructor(message: string, readonly afterSec: number) {
    super(message);
    this.name = 'ProbeTimeoutError';
  }
}

/** Seconds to transfer `bytes` to host:port; rejects on error, a wrong byte count or after timeoutMs. */
export function probe(host: string, port: number, bytes: number, timeoutMs: number, signal?: AbortSignal): Promise<number> {
  const body = payloadOf(bytes);
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = request(
      {
        host,
        port,
        method: 'POST',
        path: '/probe',
        agent: false,
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(bytes) },
        timeout: timeoutMs,
        signal,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => {
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          clearTimeout(timer);
          if (res.statusCode !== 200) return reject(new Error(`probe answered HTTP ${res.statusCode}`));
          let got = -1;
          try {
            got = (JSON.parse(text) as { bytes: number }).bytes;
          } catch {
            // handled below
          }
          if (got !== bytes) return reject(new Error(`peer received ${got} of ${bytes} bytes`));
          resolve(seconds);
        });
        res.on('error', reject);
      },
    );
    // `timeout` above is only idle time; this bounds the whole transfer.
    const late = (what: string) => new ProbeTimeoutError(`probe of ${bytes} bytes ${what}`, Number(process.hrtime.bigint() - started) / 1e9);
    const timer = setTimeout(() => req.destroy(late(`timed out after ${timeoutMs} ms`)), timeoutMs);
    req.on('timeout', () => req.destroy(late('stalled')));
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    req.end(body);
  });
}
