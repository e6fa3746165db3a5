// A TCP relay standing for a network link that can be cut: while cut, bytes on the connections
// it carries go nowhere (none is closed: to both ends, a link that went silent) and new
// connections are taken but get nothing through. Restored, new connections work again; the ones
// that were cut stay silent, as a connection whose retransmissions back off for long after the
// link came back.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

export interface CuttableLink {
  /** host:port of the relay's end. */
  address: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function cuttableLink(target: { host: string; port: number }): Promise<CuttableLink> {
  let down = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on('error', () => undefined);
    client.on('close', () => sockets.delete(client));
    if (down) return; // taken, never relayed
    const upstream = connect(target.port, target.host);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    upstream.on('close', () => sockets.delete(upstream));
    let dead = false;
    const pass = (from: Socket, to: Socket) => from.on('data', (b) => {
      if (down) dead = true; // once cut, this connection stays silent
      if (!dead) to.write(b);
    });
    pass(client, upstream);
    pass(upstream, client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    cut: () => { down = true; },
    restore: () => { down = false; },
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}
