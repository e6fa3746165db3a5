import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** How many ports below the kernel's ephemeral range to choose from. */
const SPAN = 12_000;
const LOWEST = 1024;
const TRIES = 20;

/**
 * Ports below the kernel's ephemeral range (ip_local_port_range), or undefined when there is no
 * room. A port the OS hands out for bind(0) was free a moment ago but is exactly what the next
 * outgoing connection or another program's bind(0) gets: the hub, an agent or Redis binds it ~0.5 s
 * later, in a process of its own, and two deployments starting at once once lost that race
 * (EADDRINUSE). Ports below the range are never handed out by the OS; picked at random, two
 * pickers meet one time in thousands.
 */
function quietRange(): [number, number] | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (!Number.isInteger(low) || low - LOWEST < 1000) return undefined;
    return [Math.max(LOWEST, low - SPAN), low];
  } catch {
    return undefined;
  }
}

/** Bind port (0: the OS picks) on host, close, and return the port; undefined if it is taken. */
function tryPort(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', (e: NodeJS.ErrnoException) => (port !== 0 && (e.code === 'EADDRINUSE' || e.code === 'EACCES') ? resolve(undefined) : reject(e)));
    srv.listen(port, host, () => {
      const addr = srv.address();
      const got = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(got));
    });
  });
}

/** A TCP port on host that was free a moment ago, outside the range the OS hands out itself. */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const range = quietRange();
  if (range) {
    for (let i = 0; i < TRIES; i++) {
      const port = await tryPort(range[0] + Math.floor(Math.random() * (range[1] - range[0])), host);
      if (port !== undefined) return port;
    }
  }
  return (await tryPort(0, host))!;
}
