// A TCP endpoint that takes connections and never answers: to a client, a machine that is gone
// behind a network that still accepts (or drops) — every request waits out its timeout.
import { createServer, type AddressInfo, type Socket } from 'node:net';

export interface SilentEndpoint {
  /** host:port */
  address: string;
  close(): Promise<void>;
}

export async function silentEndpoint(): Promise<SilentEndpoint> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}
