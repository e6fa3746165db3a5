// The probe endpoint peers send their DRUPE transfers to: `POST /probe` with N bytes is
// answered (200, JSON {bytes}) only once all N bytes have arrived, so the sender's clock
// covers the whole transfer. `GET /health` answers the node name (for operators and tests).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Refuse probes larger than this (64 MiB): the endpoint has no authentication. */
export const MAX_PROBE_BYTES = 64 * 1024 * 1024;

export class ProbeServer {
  private server?: Server;
  constructor(private readonly node: string) {}

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = createServer((req, res) => {
      if (req.method === 'GET' && req.url === '/health') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ node: this.node }));
        return;
      }
      if (req.method !== 'POST' || req.url !== '/probe') {
        res.writeHead(404).end();
        return;
      }
      const declared = Number(req.headers['content-length'] ?? 0);
      if (declared > MAX_PROBE_BYTES) {
        res.writeHead(413, { connection: 'close' }).end();
        req.destroy();
        return;
      }
      let bytes = 0;
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > MAX_PROBE_BYTES) req.destroy();
      });
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes }));
      });
      req.on('error', () => res.destroy());
    });
    server.keepAliveTimeout = 1000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
