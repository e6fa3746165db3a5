// The embedded MQTT broker: aedes 1.x with a TCP listener (runners' tools, mosquitto_sub, the
// telemetry bridge) and a WebSocket listener (the dashboard in a browser). Used when no external
// broker is configured. Runnable on its own so the embedded stack can keep it in the background:
//   node dist/orchestrator/stack/mqtt-broker.js [--host 127.0.0.1] [--port N] [--ws-port M]
// (prints one JSON line {tcpUrl, wsUrl, pid} on stdout once both listeners are up).
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { Aedes } from 'aedes';
import { WebSocketServer, createWebSocketStream } from 'ws';
import { runtimeError } from '../../config/errors.js';
import { freePort } from './free-port.js';

/**
 * aedes drops a message for a subscriber when a later message reached it first (its `dedupe`,
 * meant for overlapping subscriptions): a retained message waits for the retained store, so any
 * plain message published right after it overtakes it and the retained one is lost (seen with
 * aedes 1.2; moscajs/aedes#955). One in-process broker has no duplicate deliveries to remove
 * except for overlapping subscriptions, which MQTT 3.1.1 allows to deliver twice, so every client
 * gets a duplicates table that never remembers anything.
 */
const NO_DEDUPE: Record<string, number> = new Proxy({}, { get: () => 0, set: () => true, deleteProperty: () => true });

function withoutDedupe(client: unknown): void {
  if (client && typeof client === 'object' && 'duplicates' in client) (client as { duplicates: unknown }).duplicates = NO_DEDUPE;
}

export interface MqttBrokerOptions {
  host?: string;
  /** TCP port (0 or undefined = a free one). */
  port?: number;
  /** WebSocket port (0 or undefined = a free one). */
  wsPort?: number;
  /** When set, clients must log in with these. */
  username?: string;
  password?: string;
}

export class MqttBroker {
  private aedes?: Aedes;
  private tcp?: TcpServer;
  private http?: HttpServer;
  private wss?: WebSocketServer;
  private readonly sockets = new Set<Socket>();
  host: string;
  port = 0;
  wsPort = 0;

  constructor(private readonly opts: MqttBrokerOptions = {}) {
    this.host = opts.host ?? '127.0.0.1';
  }

  get tcpUrl(): string {
    return `mqtt://${this.host}:${this.port}`;
  }

  get wsUrl(): string {
    return `ws://${this.host}:${this.wsPort}/mqtt`;
  }

  get running(): boolean {
    return this.aedes !== undefined;
  }

  async start(): Promise<this> {
    // Ports chosen once and kept, so that a stop() + start() (fault tests, restarts) comes back
    // where clients expect it and their reconnect logic finds it.
    this.port = this.port || this.opts.port || (await freePort(this.host));
    this.wsPort = this.wsPort || this.opts.wsPort || (await freePort(this.host));
    const aedes = await Aedes.createBroker({ drainTimeout: 10_000 });
    const { username, password } = this.opts;
    if (username !== undefined) {
      aedes.authenticate = (_client, user, pass, done) => {
        const ok = user === username && pass?.toString() === (password ?? '');
        if (ok) return done(null, true);
        const err = Object.assign(new Error('bad user name or password'), { returnCode: 4 });
        done(err as Parameters<typeof done>[0], false);
      };
    }
    this.aedes = aedes;
    this.tcp = createTcpServer((socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      withoutDedupe(aedes.handle(socket));
    });
    this.http = createHttpServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('MQTT over WebSocket only\n');
    });
    this.wss = new WebSocketServer({ server: this.http });
    this.wss.on('connection', (ws, req) => {
      const stream = createWebSocketStream(ws);
      stream.on('error', () => ws.terminate());
      withoutDedupe(aedes.handle(stream, req));
    });
    try {
      await listen(this.tcp, this.port, this.host);
      await listen(this.http, this.wsPort, this.host);
    } catch (e) {
      await this.stop();
      throw runtimeError(`cannot start the embedded MQTT broker on ${this.host}: ${(e as Error).message}`, {
        hint: 'another process may hold the port; set JUPITER_MQTT_URL to use an external broker',
      }, e);
    }
    return this;
  }

  /** Close both listeners and every client connection. Safe to call twice. */
  async stop(): Promise<void> {
    const { aedes, tcp, http, wss } = this;
    this.aedes = undefined;
    this.tcp = undefined;
    this.http = undefined;
    this.wss = undefined;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    if (wss) {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    }
    if (aedes) await new Promise<void>((r) => aedes.close(() => r()));
    if (tcp?.listening) await new Promise<void>((r) => tcp.close(() => r()));
    if (http?.listening) {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    }
  }
}

function listen(server: TcpServer | HttpServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function argValue(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}

async function main(args: string[]): Promise<void> {
  const broker = new MqttBroker({
    host: argValue(args, '--host'),
    port: Number(argValue(args, '--port') ?? 0),
    wsPort: Number(argValue(args, '--ws-port') ?? 0),
    username: process.env.JUPITER_MQTT_USERNAME,
    password: process.env.JUPITER_MQTT_PASSWORD,
  });
  await broker.start();
  process.stdout.write(`${JSON.stringify({ tcpUrl: broker.tcpUrl, wsUrl: broker.wsUrl, pid: process.pid })}\n`);
  const shutdown = (): void => void broker.stop().then(() => process.exit(0));
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`mqtt-broker: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
