// The dashboard server's own MQTT subscription: it reads the telemetry topics with the hub's
// credentials and keeps the latest message of every topic, so that browsers get live data (and
// the retained state when they connect) from the dashboard over its WebSocket (live-socket.ts)
// and never see a broker address or credential. Every Jupiter topic is retained "latest state",
// so this cache is exactly what a new MQTT subscriber would have been sent by the broker.
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { maskUrl } from '../../config/cluster/mask.js';
import { TOPIC_ROOT } from '../telemetry/topics.js';
import type { PublisherOptions } from '../telemetry/publisher.js';

export type FeedOptions = Pick<PublisherOptions, 'url' | 'username' | 'password' | 'tls'> & {
  /** Reconnect period, ms (default 1000). */
  reconnectMs?: number;
  /** Most topics remembered (default 100 000): a bound against a flood of made-up topics. */
  maxTopics?: number;
  log?: (line: string) => void;
};

/** One message as browsers get it: `{"topic":...,"msg":{...}}`, built once and shared. */
export interface FeedEntry {
  topic: string;
  /** The app whose view needs it; null = every view (mappings feed the app picker; nodes). */
  app: string | null;
  json: string;
}

export type FeedListener = (e: { entry?: FeedEntry; status?: boolean }) => void;

// What the page shows: every app's mapping, every node, the network faults, and the tasks,
// stats and newest re-map event of one app.
const FILTERS = [`${TOPIC_ROOT}/+/mapping`, `${TOPIC_ROOT}/nodes/+`, `${TOPIC_ROOT}/network/faults`, `${TOPIC_ROOT}/+/tasks/+`, `${TOPIC_ROOT}/+/stats`, `${TOPIC_ROOT}/+/remap`];

/** Which view a topic belongs to; undefined = not a topic the page shows. */
function scopeOf(topic: string): string | null | undefined {
  const p = topic.split('/');
  if (p[0] !== TOPIC_ROOT) return undefined;
  if (p.length === 3 && p[1] === 'nodes') return null;
  if (p.length === 3 && p[1] === 'network' && p[2] === 'faults') return null;
  if (p.length === 3 && p[2] === 'mapping') return null;
  if ((p.length === 4 && p[2] === 'tasks') || (p.length === 3 && (p[2] === 'stats' || p[2] === 'remap'))) return p[1]!;
  return undefined;
}

export class TelemetryFeed {
  private client?: MqttClient;
  private readonly latest = new Map<string, FeedEntry>();
  private readonly listeners: FeedListener[] = [];
  private down = false;
  private full = false;
  private readonly log: (line: string) => void;

  constructor(private readonly opts: FeedOptions) {
    this.log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  get connected(): boolean {
    return this.client?.connected ?? false;
  }

  onChange(listener: FeedListener): void {
    this.listeners.push(listener);
  }

  /** Connect in the background; returns at once (the page shows the broker offline meanwhile). */
  start(): this {
    if (this.client) return this;
    const o = this.opts;
    const options: IClientOptions = {
      clientId: `jupiter-dashboard-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
      username: o.username,
      password: o.password,
      reconnectPeriod: o.reconnectMs ?? 1000,
      connectTimeout: 5000,
      // Subscribed again on every connect below; mqtt.js's own resubscription would double it.
      resubscribe: false,
      ...(o.tls ?? {}),
    };
    const client = mqtt.connect(o.url, options);
    this.client = client;
    client.on('connect', () => {
      if (this.down) this.log(`dashboard: live feed reconnected to ${maskUrl(o.url)}`);
      this.down = false;
      client.subscribe(FILTERS, { qos: 0 });
      this.emit({ status: true });
    });
    const lost = (why: string): void => {
      if (this.client !== client || this.down) return; // once per outage, not per retry
      this.down = true;
      this.log(`dashboard: live feed lost ${maskUrl(o.url)} (${why}); browsers see it offline until it is back`);
      this.emit({ status: false });
    };
    client.on('error', (e) => lost(e.message));
    client.on('close', () => lost('connection closed'));
    client.on('message', (topic, payload) => this.receive(topic, payload));
    return this;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await client.endAsync(true);
  }

  /** Every remembered entry for a new view of `app` (global ones first), or only the app's. */
  snapshot(app: string | null, onlyApp = false): FeedEntry[] {
    const out: FeedEntry[] = [];
    if (!onlyApp) for (const e of this.latest.values()) if (e.app === null) out.push(e);
    if (app) for (const e of this.latest.values()) if (e.app === app) out.push(e);
    return out;
  }

  private receive(topic: string, payload: Buffer): void {
    const app = scopeOf(topic);
    if (app === undefined) return;
    const text = payload.toString('utf8');
    if (!text) {
      this.latest.delete(topic); // a cleared retained topic: new views must not get it
      return;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      return; // not ours: the page would drop it too
    }
    if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return;
    if (!this.latest.has(topic) && this.latest.size >= (this.opts.maxTopics ?? 100_000)) {
      if (!this.full) this.log(`dashboard: more than ${this.latest.size} telemetry topics; new ones are relayed but not remembered`);
      this.full = true;
    }
    // `text` parsed as a JSON object, so splicing it in keeps the entry valid JSON.
    const entry: FeedEntry = { topic, app, json: `{"topic":${JSON.stringify(topic)},"msg":${text}}` };
    if (!this.full || this.latest.has(topic)) this.latest.set(topic, entry);
    this.emit({ entry });
  }

  private emit(e: Parameters<FeedListener>[0]): void {
    for (const l of this.listeners) l(e);
  }
}
