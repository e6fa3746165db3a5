// The raw TCP baseline of bench:dataplane, one role per process; the bench starts each inside a
// testbed host's network namespace (nsenter --net), so its bytes cross the same shaped classes as
// the runners'. Every role prints one JSON line on stdout: `{"listening": true}` once a server
// accepts connections, then its result. Times are Unix ms with sub-ms precision (one machine, one
// clock, so the source's and the sink's times compare).
//   sink   <addr> <port> <bytes> [<size>]  accept one connection, read <bytes>: {firstAt, lastAt, bytes}
//                                           and, with <size>, itemsAt: when each <size>-byte item was
//                                           in whole (the bench's steady rate counts from the first)
//   relay  <addr> <port> <toAddr> <toPort>  accept one connection, forward everything to <to>: {bytes}
//   source <addr> <port> <count> <size>     send <count> buffers of <size> bytes: {startAt, endAt}
import { createConnection, createServer, type Socket } from 'node:net';

const now = (): number => performance.timeOrigin + performance.now();
const say = (o: object): void => {
  process.stdout.write(`${JSON.stringify(o)}\n`);
};

function listen(addr: string, port: number, onConn: (s: Socket) => void): void {
  const server = createServer((s) => {
    server.close();
    onConn(s);
  });
  server.listen(port, addr, () => say({ listening: true }));
}

function sink(addr: string, port: number, want: number, size: number): void {
  listen(addr, port, (s) => {
    let got = 0;
    let firstAt = 0;
    const itemsAt: number[] = [];
    s.on('data', (d: Buffer) => {
      if (got === 0) firstAt = now();
      got += d.length;
      // An item is in once all its bytes are (one stamp per item boundary this chunk crossed).
      while (size > 0 && got >= (itemsAt.length + 1) * size) itemsAt.push(now());
      if (got >= want) {
        say({ firstAt, lastAt: now(), bytes: got, ...(size > 0 ? { itemsAt } : {}) });
        s.destroy();
        process.exit(0);
      }
    });
    s.on('end', () => {
      say({ firstAt, lastAt: now(), bytes: got, short: true });
      process.exit(1);
    });
  });
}

function relay(addr: string, port: number, toAddr: string, toPort: number): void {
  listen(addr, port, (s) => {
    const out = createConnection({ host: toAddr, port: toPort, noDelay: true });
    let bytes = 0;
    s.on('data', (d: Buffer) => (bytes += d.length));
    s.pipe(out);
    out.on('close', () => {
      say({ bytes });
      process.exit(0);
    });
  });
}

function source(addr: string, port: number, count: number, size: number): void {
  const buf = Buffer.alloc(size, 0x5a);
  const s = createConnection({ host: addr, port, noDelay: true }, () => {
    const startAt = now();
    let sent = 0;
    const pump = (): void => {
      while (sent < count) {
        sent++;
        if (!s.write(buf)) {
          s.once('drain', pump);
          return;
        }
      }
      s.end(() => {
        say({ startAt, endAt: now() });
        process.exit(0);
      });
    };
    pump();
  });
}

const [role, a, b, c, d] = process.argv.slice(2);
if (role === 'sink') sink(a!, Number(b), Number(c), Number(d ?? 0));
else if (role === 'relay') relay(a!, Number(b), c!, Number(d));
else if (role === 'source') source(a!, Number(b), Number(c), Number(d));
else {
  process.stderr.write('usage: tcp.js sink|relay|source ...\n');
  process.exit(2);
}
