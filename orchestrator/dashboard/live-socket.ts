// `/live`: the WebSocket on the dashboard's own HTTP server through which pages get telemetry.
// Server -> page: each frame is a JSON array of entries, `{"topic","msg"}` (an MQTT message as
// the feed received it) or `{"status":{"broker":bool,"configured":bool}}` (is the feed connected;
// is there a broker at all). Page -> server:
// `{"app":"name"}` when the user picks another app (the first one comes as ?app= in the URL). A
// page gets every mapping and node, and the tasks and stats of its app only, as it did when it
// subscribed to the broker itself; on connect it first gets all that is remembered (retained).
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import type { TelemetryFeed } from './mqtt-feed.js';

export const LIVE_PATH = '/live';

interface View {
  ws: WebSocket;
  app: string | null;
  queue: string[];
}

export interface LiveSocketOptions {
  /**
   * Bytes a page may fall behind before it is disconnected (default 8 MiB). Every topic is
   * latest-state, so the page loses nothing by reconnecting: it gets a fresh snapshot.
   */
  maxBufferedBytes?: number;
}

/**
 * A page of another site must not read telemetry through the user's browser (WebSockets are not
 * bound by the same-origin policy): browsers always send Origin, so it must be this server. A
 * reverse proxy may rewrite Host; its X-Forwarded-Host counts too (a page cannot set that header).
 */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true; // not a browser (curl, tests): nothing to protect here
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return false;
  }
  const forwarded = String(req.headers['x-forwarded-host'] ?? '').split(',')[0]!.trim();
  return host === req.headers.host || (forwarded !== '' && host === forwarded);
}

function appName(v: unknown): string | null {
  return typeof v === 'string' && v.length > 0 && v.length <= 200 ? v : null;
}

export class LiveSocket {
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 4096 });
  private readonly views = new Set<View>();
  private flushing = false;
  private readonly maxBuffered: number;

  constructor(private readonly feed: TelemetryFeed | undefined, opts: LiveSocketOptions = {}) {
    this.maxBuffered = opts.maxBufferedBytes ?? 8 * 2 ** 20;
    feed?.onChange(({ entry, status }) => {
      if (status !== undefined) for (const v of this.views) this.queue(v, this.statusJson());
      if (entry) for (const v of this.views) if (entry.app === null || entry.app === v.app) this.queue(v, entry.json);
    });
  }

  get clients(): number {
    return this.views.size;
  }

  /** Take over WebSocket upgrades of `http` (only LIVE_PATH is served). */
  attach(http: Server): void {
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const refuse = (status: string): void => {
        socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      };
      if (url.pathname !== LIVE_PATH) return refuse('404 Not Found');
      if (!sameOrigin(req)) return refuse('403 Forbidden');
      this.wss.handleUpgrade(req, socket, head, (ws) => this.open(ws, appName(url.searchParams.get('app'))));
    });
  }

  close(): void {
    for (const v of this.views) v.ws.terminate();
    this.views.clear();
    this.wss.close();
  }

  private open(ws: WebSocket, app: string | null): void {
    const view: View = { ws, app, queue: [] };
    this.views.add(view);
    ws.on('close', () => this.views.delete(view));
    ws.on('error', () => ws.terminate());
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let msg: { app?: unknown };
      try {
        msg = JSON.parse(data.toString()) as { app?: unknown };
      } catch {
        return;
      }
      const next = appName(msg?.app);
      if (next === view.app) return;
      view.app = next;
      // What a fresh MQTT subscription to the app's topics would have got: their retained state.
      for (const e of this.feed?.snapshot(next, true) ?? []) this.queue(view, e.json);
    });
    this.queue(view, this.statusJson());
    for (const e of this.feed?.snapshot(app) ?? []) this.queue(view, e.json);
  }

  private statusJson(): string {
    return JSON.stringify({ status: { broker: this.feed?.connected ?? false, configured: this.feed !== undefined } });
  }

  /** Entries are batched per page and sent once the current burst of messages is handled. */
  private queue(view: View, json: string): void {
    view.queue.push(json);
    if (!this.flushing) {
      this.flushing = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushing = false;
    for (const v of this.views) {
      if (v.queue.length === 0 || v.ws.readyState !== WebSocket.OPEN) continue;
      if (v.ws.bufferedAmount > this.maxBuffered) {
        v.queue = [];
        v.ws.close(1013, 'too far behind; reconnect for a fresh snapshot');
        continue;
      }
      v.ws.send(`[${v.queue.join(',')}]`);
      v.queue = [];
    }
  }
}
