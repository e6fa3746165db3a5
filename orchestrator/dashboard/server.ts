// The dashboard server (node:http): the static page, /config.json (which app to show first),
// /live (a WebSocket relaying telemetry, live-socket.ts), /metrics (Prometheus) and /healthz. It
// hosts the telemetry bridge, and an embedded aedes broker when no broker is given. The server
// itself subscribes to the broker (mqtt-feed.ts), so browsers never get a broker address or credential;
// the page fetches /config.json once, then gets everything over /live and never polls.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runtimeError } from '../../config/errors.js';
import { MqttBroker } from '../stack/mqtt-broker.js';
import { freePort } from '../stack/free-port.js';
import { TelemetryBridge, type BridgeOptions } from '../telemetry/bridge.js';
import { TelemetryMetrics } from '../telemetry/metrics.js';
import type { PublisherOptions } from '../telemetry/publisher.js';
import { TelemetryFeed, type FeedOptions } from './mqtt-feed.js';
import { LiveSocket } from './live-socket.js';

export interface DashboardOptions {
  redisUrl: string;
  prefix?: string;
  host?: string;
  /** HTTP port (0 or undefined = a free one). */
  port?: number;
  /** App shown first (otherwise the first deployed app the page sees). */
  app?: string;
  /**
   * The broker the bridge publishes to. undefined = start an embedded aedes broker here
   * (on embeddedPorts, free ones by default); null = do not publish (another bridge does).
   */
  mqtt?: (PublisherOptions & { compat?: boolean }) | null;
  /**
   * The broker this server subscribes to for the pages' live data (with these credentials, which
   * stay here). Default: the broker the bridge publishes to, or the embedded one; needed with
   * mqtt: null (another process's bridge publishes).
   */
  live?: FeedOptions;
  /** With username, the embedded broker refuses clients without this login. */
  embeddedPorts?: { port?: number; wsPort?: number; host?: string; username?: string; password?: string };
  /** Passed to the bridge (intervals, app filter). */
  bridge?: Pick<BridgeOptions, 'statsIntervalMs' | 'pollIntervalMs' | 'blockMs' | 'windowSec' | 'apps'>;
  log?: (line: string) => void;
}

const STATIC_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** The static folder lives next to the sources (tsc does not copy it): walk up to the package root. */
function findStaticDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return join(dir, 'orchestrator', 'dashboard', 'static');
}

export class DashboardServer {
  private http?: Server;
  private broker?: MqttBroker;
  readonly bridge: TelemetryBridge;
  readonly metrics: TelemetryMetrics;
  private readonly staticDir = findStaticDir();
  private feed?: TelemetryFeed;
  private live?: LiveSocket;
  port = 0;

  constructor(private readonly opts: DashboardOptions) {
    // The bridge is created here (without MQTT settings yet) so listeners can be attached early;
    // its publisher options are completed in start() once an embedded broker has its ports.
    this.bridge = new TelemetryBridge({ redisUrl: opts.redisUrl, prefix: opts.prefix, log: opts.log, ...opts.bridge });
    this.metrics = new TelemetryMetrics(this.bridge);
  }

  get host(): string {
    return this.opts.host ?? '127.0.0.1';
  }

  get url(): string {
    const h = this.host === '0.0.0.0' || this.host === '::' ? '127.0.0.1' : this.host;
    return `http://${h}:${this.port}/${this.opts.app ? `?app=${encodeURIComponent(this.opts.app)}` : ''}`;
  }

  /** The embedded broker, when this server started one. */
  get embeddedBroker(): MqttBroker | undefined {
    return this.broker;
  }

  async start(): Promise<this> {
    if (!existsSync(join(this.staticDir, 'index.html'))) {
      throw runtimeError(`dashboard files not found in ${this.staticDir}`, { hint: 'reinstall Jupiter; the folder orchestrator/dashboard/static must ship with it' });
    }
    let mqttOpts = this.opts.mqtt ?? undefined;
    if (this.opts.mqtt === undefined) {
      const e = this.opts.embeddedPorts ?? {};
      this.broker = await new MqttBroker({ host: e.host, port: e.port, wsPort: e.wsPort, username: e.username, password: e.password }).start();
      mqttOpts = { url: this.broker.tcpUrl, username: e.username, password: e.password };
    }
    this.bridge.useMqtt(mqttOpts);
    await this.bridge.start();
    const feedOpts: FeedOptions | undefined = this.opts.live
      ?? (mqttOpts && { url: mqttOpts.url, username: mqttOpts.username, password: mqttOpts.password, tls: mqttOpts.tls });
    this.feed = feedOpts && new TelemetryFeed({ log: this.opts.log, ...feedOpts }).start();
    this.live = new LiveSocket(this.feed);
    this.port = this.opts.port || (await freePort(this.host));
    const http = createServer((req, res) => {
      this.route(req, res).catch((e: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`internal error: ${(e as Error).message}\n`);
      });
    });
    this.http = http;
    this.live.attach(http);
    try {
      await new Promise<void>((resolveListen, reject) => {
        http.once('error', (e) => reject(runtimeError(`cannot serve the dashboard on ${this.host}:${this.port}: ${e.message}`, {
          hint: 'choose another port with --port',
        }, e)));
        http.listen(this.port, this.host, () => resolveListen());
      });
    } catch (e) {
      await this.stop(); // the bridge, feed and broker are running already
      throw e;
    }
    return this;
  }

  async stop(): Promise<void> {
    const http = this.http;
    this.http = undefined;
    this.live?.close();
    this.live = undefined;
    if (http) {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    }
    await this.feed?.stop();
    this.feed = undefined;
    await this.bridge.stop();
    await this.broker?.stop();
    this.broker = undefined;
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/' || path === '/index.html') return this.file(res, join(this.staticDir, 'index.html'));
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path === '/config.json') {
      // Deliberately no broker address or credential: the page's live data comes over /live.
      const body = { app: this.opts.app ?? null, apps: this.bridge.apps() };
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
      return;
    }
    if (path === '/metrics') {
      const text = await this.metrics.text();
      res.writeHead(200, { 'content-type': this.metrics.contentType }).end(text);
      return;
    }
    const m = /^\/static\/([A-Za-z0-9_.-]+)$/.exec(path);
    if (m && !m[1]!.startsWith('.')) return this.file(res, resolve(this.staticDir, m[1]!));
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  }

  private async file(res: ServerResponse, file: string): Promise<void> {
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    const ext = file.slice(file.lastIndexOf('.'));
    res.writeHead(200, { 'content-type': STATIC_TYPES[ext] ?? 'application/octet-stream', 'cache-control': 'no-cache' }).end(body);
  }
}
