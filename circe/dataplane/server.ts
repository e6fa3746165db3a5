// The data endpoint of a node on the direct data path: receivers GET the bytes of a blob from
// the node that produced it. Only holders of the deployment's token are served (constant-time
// compare), only blob ids (no paths), only this deployment's store.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { closeSync, readSync } from 'node:fs';
import { BLOB_ID, type NodeStore } from './store.js';

export interface DataServerOptions {
  store: NodeStore;
  /** The deployment's data token (a secret shared through the deployment's Redis). */
  token: string;
  /** Address to listen on (default all interfaces: receivers are on other machines). */
  host?: string;
  port?: number;
}

function tokenOk(header: string | undefined, token: string): boolean {
  if (!header?.startsWith('Bearer ')) return false;
  const got = Buffer.from(header.slice(7));
  const want = Buffer.from(token);
  return got.length === want.length && timingSafeEqual(got, want);
}

/**
 * Reusable buffers for serving files: a blob goes out in pieces read into one of these, so a
 * served frame leaves no buffer of its size behind as garbage. A piece holds a whole frame of a
 * few MiB: the socket gets all of it at once and the kernel sends it on while this runner's event
 * loop runs a task; with small pieces the link would idle whenever the producer's task held the
 * loop between two pieces.
 */
const PIECE = 4 * 1024 * 1024;
const pieces: Buffer[] = [];

/** Write `size` bytes of `fd` to `res`, a piece at a time, each once the previous one left for the kernel. */
async function sendFile(fd: number, size: number, res: ServerResponse): Promise<void> {
  const buf = pieces.pop() ?? Buffer.allocUnsafeSlow(PIECE);
  try {
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buf, 0, Math.min(PIECE, size - at), at);
      if (n <= 0) throw new Error('blob file ended early');
      at += n;
      const last = at >= size;
      // The callback runs once the piece was handed to the socket: the buffer is free again.
      await new Promise<void>((resolve, reject) => {
        const done = (e?: Error | null): void => (e ? reject(e) : resolve());
        if (last) res.end(buf.subarray(0, n), done);
        else res.write(buf.subarray(0, n), done);
      });
    }
  } finally {
    if (pieces.length < 2) pieces.push(buf);
  }
}

export class DataServer {
  private server?: Server;
  port = 0;
  /** Blobs served, bytes served (for status and tests). */
  readonly stats = { served: 0, bytes: 0, refused: 0 };

  constructor(private readonly opts: DataServerOptions) {}

  async start(): Promise<number> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.port ?? 0, this.opts.host ?? '0.0.0.0', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
    return this.port;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refuse = (code: number, msg: string): void => {
      this.stats.refused++;
      res.writeHead(code, { 'content-type': 'text/plain' }).end(msg);
    };
    if (!tokenOk(req.headers.authorization, this.opts.token)) return refuse(401, 'not a holder of this deployment\'s data token\n');
    if (req.method !== 'GET') return refuse(405, 'GET only\n');
    const m = /^\/blob\/([^/?#]+)$/.exec(req.url ?? '');
    if (!m || !BLOB_ID.test(m[1]!)) return refuse(400, 'expected /blob/<40 hex digits>\n');
    let file: { fd: number; size: number } | undefined;
    try {
      file = this.opts.store.open(m[1]!);
    } catch (e) {
      return refuse(500, `${(e as Error).message}\n`);
    }
    if (!file) return refuse(404, 'this node does not hold that blob\n');
    this.stats.served++;
    this.stats.bytes += file.size;
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.size });
    try {
      await sendFile(file.fd, file.size, res);
    } catch {
      // the receiver went away (it asks again) or the file went: the answer ends short, which
      // the receiver sees as a failed attempt
      res.destroy();
    } finally {
      closeSync(file.fd);
    }
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
