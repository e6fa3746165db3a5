// freePort (orchestrator/stack/free-port.ts): ports the OS does not hand out itself, so that a
// port chosen for a hub, an agent or Redis is not taken by an outgoing connection before the
// server binds it.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from '../../orchestrator/stack/free-port.js';

describe('stack: freePort', () => {
  it('picks bindable ports below the kernel\'s ephemeral range, spread at random', async () => {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    const ports = await Promise.all(Array.from({ length: 30 }, () => freePort()));
    for (const p of ports) expect(p).to.be.below(low).and.at.least(1024);
    expect(new Set(ports).size).to.be.at.least(28);
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(ports[0], '127.0.0.1', () => r()));
    srv.close();
  });
});
