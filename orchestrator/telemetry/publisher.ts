// Best-effort MQTT publishing: publish() never throws, never waits and never grows memory without
// bound. While the broker is away, messages wait in a bounded buffer (oldest dropped first), the
// last retained message of every topic is kept apart and re-sent after every (re)connect (a
// restarted broker has lost them), and one warning is printed per outage. A warning names the
// broker (password masked) and, for problems retrying cannot fix (TLS, credentials), a hint.
import { maskUrl } from '../../config/cluster/mask.js';
import { explainBrokerError, scrubSecrets, type BrokerProblem } from './broker-problem.js';
import mqtt, { type MqttClient, type IClientOptions } from 'mqtt';

export interface PublisherOptions {
  url: string;
  username?: string;
  password?: string;
  /** PEM strings for mqtts:// and wss:// brokers. */
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  clientId?: string;
  /** Messages kept while the broker is unreachable (default 10 000). */
  bufferLimit?: number;
  /** Messages handed to the socket and not yet written (default 500): beyond that, buffer. */
  maxInFlight?: number;
  /** Reconnect period, ms (default 1000). */
  reconnectMs?: number;
  /** Where warnings go (default: stderr). */
  log?: (line: string) => void;
}

export interface PublisherCounters {
  connected: boolean;
  published: number;
  dropped: number;
  buffered: number;
  retainedTopics: number;
  outages: number;
}

interface Pending {
  topic: string;
  payload: string;
}


export class MqttPublisher {
  private client?: MqttClient;
  private buffer: Pending[] = [];
  private head = 0;
  private readonly retained = new Map<string, string>();
  /** Retained topics whose latest payload has not been handed to the socket yet. */
  private readonly dirty = new Set<string>();
  private inFlight = 0;
  private draining = false;
  private warned = false;
  private down = false;
  private hinted = false;
  private everConnected = false;
  private problem?: BrokerProblem;
  private readonly counters = { published: 0, dropped: 0, outages: 0 };
  private readonly bufferLimit: number;
  private readonly maxInFlight: number;
  private readonly log: (line: string) => void;

  constructor(private readonly opts: PublisherOptions) {
    this.bufferLimit = opts.bufferLimit ?? 10_000;
    this.maxInFlight = opts.maxInFlight ?? 500;
    this.log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /** Connect in the background; returns at once. */
  start(): this {
    if (this.client) return this;
    const o = this.opts;
    const options: IClientOptions = {
      clientId: o.clientId ?? `jupiter-telemetry-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
      username: o.username,
      password: o.password,
      reconnectPeriod: o.reconnectMs ?? 1000,
      connectTimeout: 5000,
      // Our own bounded buffer replaces mqtt.js's unbounded offline queue.
      queueQoSZero: false,
      ...(o.tls ?? {}),
    };
    const client = mqtt.connect(o.url, options);
    this.client = client;
    client.on('connect', () => {
      this.problem = undefined;
      this.everConnected = true;
      if (this.down) this.log(`telemetry: MQTT broker ${maskUrl(o.url)} is back; resending ${this.retained.size} retained topics and ${this.size} buffered messages`);
      this.down = false;
      for (const topic of this.retained.keys()) this.dirty.add(topic);
      this.drain();
    });
    const warn = (why: string, hint: string | undefined): void => {
      if (hint) this.hinted = true;
      const line = `telemetry: MQTT broker ${maskUrl(o.url)} unreachable (${why}); buffering up to ${this.bufferLimit} messages and retrying in the background — the pipeline is not affected${hint ? `\n  hint: ${hint}` : ''}`;
      this.log(scrubSecrets(line, o));
    };
    const lost = (why: string, problem?: BrokerProblem): void => {
      if (this.client !== client) return;
      if (this.down) {
        // The outage was announced without a cause (closed before the error arrived): say it now.
        if (problem?.hint && !this.hinted) warn(problem.why, problem.hint);
        return;
      }
      this.down = true;
      this.counters.outages += 1;
      if (!this.warned) {
        this.warned = true;
        warn(why, problem?.hint);
      }
    };
    client.on('error', (e) => {
      const problem = explainBrokerError(e, { ...o, connectedBefore: this.everConnected });
      this.problem = problem;
      lost(problem.why, problem);
    });
    client.on('offline', () => lost('offline'));
    client.on('close', () => {
      this.inFlight = 0;
      lost('connection closed');
    });
    return this;
  }

  /** Why the last connection attempt failed (undefined once connected). */
  get lastProblem(): BrokerProblem | undefined {
    return this.problem;
  }

  get connected(): boolean {
    return this.client?.connected ?? false;
  }

  private get size(): number {
    return this.buffer.length - this.head;
  }

  /** Queue a message; retained ones are also remembered per topic for re-sending after reconnects. */
  publish(topic: string, payload: string | object, opts: { retain?: boolean } = {}): void {
    const text = typeof payload === 'string' ? payload : JSON.stringify(payload);
    if (opts.retain) {
      this.retained.set(topic, text);
      // Not buffered: the map holds the latest payload; drain() or a reconnect sends it.
      if (this.dirty.size === 0 && this.canSend()) this.send(topic, text, true);
      else this.dirty.add(topic);
      return;
    }
    if (this.size === 0 && this.canSend()) {
      this.send(topic, text, false);
      return;
    }
    this.buffer.push({ topic, payload: text });
    if (this.size > this.bufferLimit) {
      this.head += 1;
      this.counters.dropped += 1;
    }
    if (this.head > 4096 && this.head * 2 > this.buffer.length) {
      this.buffer = this.buffer.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * Clear retained topics at the broker (an empty retained message deletes one): `topics`, and
   * every retained topic this publisher sent under `root`. Returns how many.
   */
  clearRetained(root: string, topics: string[] = []): number {
    const all = new Set([...topics, ...[...this.retained.keys()].filter((t) => t.startsWith(root))]);
    for (const t of all) this.publish(t, '', { retain: true });
    return all.size;
  }

  private canSend(): boolean {
    return this.connected && this.inFlight < this.maxInFlight;
  }

  private send(topic: string, payload: string, retain: boolean): void {
    const client = this.client;
    if (!client) return;
    this.inFlight += 1;
    client.publish(topic, payload, { qos: 0, retain }, (err) => {
      this.inFlight = Math.max(0, this.inFlight - 1);
      if (!err) this.counters.published += 1;
      this.drain();
    });
  }

  private drain(): void {
    // Re-entered from publish callbacks that mqtt.js may call synchronously: the outer loop goes on.
    if (this.draining) return;
    this.draining = true;
    try {
      for (const topic of this.dirty) {
        if (!this.canSend()) return;
        this.dirty.delete(topic);
        const payload = this.retained.get(topic);
        if (payload !== undefined) this.send(topic, payload, true);
      }
      while (this.size > 0 && this.canSend()) {
        const m = this.buffer[this.head]!;
        this.head += 1;
        this.send(m.topic, m.payload, false);
      }
      if (this.size === 0 && this.head > 0) {
        this.buffer = [];
        this.head = 0;
      }
    } finally {
      this.draining = false;
    }
  }

  counts(): PublisherCounters {
    return {
      connected: this.connected,
      published: this.counters.published,
      dropped: this.counters.dropped,
      buffered: this.size,
      retainedTopics: this.retained.size,
      outages: this.counters.outages,
    };
  }

  /**
   * Resolve true once connected, false after timeoutMs or as soon as a problem that retrying
   * cannot fix (TLS, credentials) is known; for callers that prefer to wait.
   */
  async waitConnected(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.connected) {
      if (Date.now() > deadline || this.problem?.permanent) return false;
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }

  /** Give buffered messages up to graceMs to go out, then disconnect. */
  async stop(graceMs = 1000): Promise<void> {
    const client = this.client;
    if (!client) return;
    const deadline = Date.now() + graceMs;
    while (this.connected && (this.size > 0 || this.dirty.size > 0 || this.inFlight > 0) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    this.client = undefined;
    await new Promise<void>((resolve) => client.end(!this.connected, {}, () => resolve()));
  }
}
