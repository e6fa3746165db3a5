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
}

/** One GET of a blob from one endpoint (`host:port`). Network errors reject with `code`. */
export function getBlob(endpoint: string, id: string, opts: FetchOptions): Promise<Buffer> {
  const colon = endpoint.lastIndexOf(':');
  return new Promise<Buffer>((resolve, reject) => {
    const req = request({
      host: endpoint.slice(0, colon), port: Number(endpoint.slice(colon + 1)), path: `/blob/${id}`, method: 'GET', agent,
      headers: { authorization: `Bearer ${opts.token}` }, timeout: opts.timeoutMs,
    }, (res) => {
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
        const body = Buffer.concat(chunks);
        if (res.statusCode === 200) resolve(body);
        else if (res.statusCode === 404) reject(new BlobMissingError(`node at ${endpoint} does not hold blob ${id}`));
        else reject(new BlobMissingError(`node at ${endpoint} refused blob ${id}: ${res.statusCode} ${body.toString().trim()}`));
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error(`no answer from ${endpoint} within ${opts.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end();
  });
}
