// The telemetry bridge: tails what the runtime writes to Redis (each app's event stream, its
// mapping record, the agents' resource reports) and republishes it over MQTT (topics.ts), keeps
// the per-app statistics and feeds listeners such as the Prometheus metrics. Runners never talk
// MQTT, so a slow or missing broker can only ever delay this process's own publishing.
//
// Catch-up: an app's stream is read from its beginning when the app is discovered. Events that
// were already there count towards statistics and metrics, but only each task's last one is
// published (retained), so a late-started bridge does not replay history at viewers.
import { scanKeys } from '../../circe/queue/connection.js';
import { Redis } from '../../circe/queue/libs.js';
import { redisKeys, type Keys } from '../../config/redis-keys.js';
import type { AppEvent, MappingRecord, TaskEvent } from '../../config/events.js';
import type { LinkProfile, NodeResources } from '../../config/types.js';
import { MqttPublisher, type PublisherOptions } from './publisher.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { AppStats } from './stats.js';
import { COMPAT_TOPIC, mappingMessage, topics, type FaultsMessage, type NodeMessage, type RemapMessage, type TaskMessage } from './topics.js';
import { readNetworkHealth } from '../profiles/faults.js';
import { compatMappingLine, compatTaskLine } from './compat.js';
import { pipeline } from '../../circe/queue/pipeline.js';

export interface BridgeOptions {
  redisUrl: string;
  prefix?: string;
  /** Where to publish; undefined = compute statistics and metrics only. */
  mqtt?: PublisherOptions & { compat?: boolean };
  /** Only these apps (default: every app found in Redis). */
  apps?: string[];
  /** How often to publish jupiter/<app>/stats, ms (default 2000). */
  statsIntervalMs?: number;
  /** How often to look for apps, mappings and node reports, ms (default 2000). */
  pollIntervalMs?: number;
  /** XREAD BLOCK timeout, ms (default 1000): the longest a newly found app waits to be tailed. */
  blockMs?: number;
  /** Throughput window of the statistics, seconds (default 30). */
  windowSec?: number;
  log?: (line: string) => void;
}

export type EventListener = (ev: AppEvent) => void;

interface AppState {
  name: string;
  stream: string;
  cursor: string;
  /** Last stream id present when the app was found: up to it, events are history. */
  replayUntil: string;
  replaying: boolean;
  lastOfTask: Map<string, TaskEvent>;
  stats: AppStats;
  mappingJson?: string;
  mapping?: MappingRecord;
  /** The newest re-map event published (its JSON). */
  remapJson?: string;
}

const READ_COUNT = 1000;

/** Compare Redis stream ids `ms-seq`. */
export function compareIds(a: string, b: string): number {
  const [am = '0', as = '0'] = a.split('-');
  const [bm = '0', bs = '0'] = b.split('-');
  return am.length !== bm.length ? am.length - bm.length : am !== bm ? (am < bm ? -1 : 1) : Number(as) - Number(bs);
}

/** XREAD's reply as [stream, entries] pairs: RESP2 gives pairs, RESP3 a map that arrives flattened. */
export function streamReply(raw: unknown): Array<[string, Array<[string, string[]]>]> | null {
  if (!Array.isArray(raw) || raw.length === 0) return null;
  if (typeof raw[0] !== 'string') return raw as Array<[string, Array<[string, string[]]>]>;
  const pairs: Array<[string, Array<[string, string[]]>]> = [];
  for (let i = 0; i + 1 < raw.length; i += 2) pairs.push([String(raw[i]), raw[i + 1] as Array<[string, string[]]>]);
  return pairs;
}

function taskMessage(ev: TaskEvent): TaskMessage {
  return {
    app: ev.app,
    task: ev.task,
    event: ev.type,
    item: ev.item,
    node: ev.node,
    ts: ev.ts,
    ...(ev.durationMs !== undefined ? { durationSec: ev.durationMs / 1000 } : {}),
    ...(ev.error !== undefined ? { error: ev.error } : {}),
    ...(ev.attempt !== undefined ? { attempt: ev.attempt } : {}),
    ...(ev.final !== undefined ? { final: ev.final } : {}),
  };
}

export class TelemetryBridge {
  private readonly keys: Keys;
  private redis?: Redis;
  private blocking?: Redis;
  private publisher?: MqttPublisher;
  private readonly appStates = new Map<string, AppState>();
  private readonly nodeCache = new Map<string, NodeMessage>();
  private readonly listeners: EventListener[] = [];
  private timers: NodeJS.Timeout[] = [];
  private stopped = true;
  private tailDone?: Promise<void>;
  private polls = 0;
  private redisWarned = false;
  private eventsSeen = 0;
  private readonly log: (line: string) => void;

  constructor(private readonly opts: BridgeOptions) {
    this.keys = redisKeys(opts.prefix);
    this.log = opts.log ?? ((line) => process.stderr.write(`${line}\n`));
  }

  /** Set (or unset) where to publish; only before start(). */
  useMqtt(mqtt: BridgeOptions['mqtt']): void {
    if (!this.stopped) throw new Error('TelemetryBridge.useMqtt() after start()');
    this.opts.mqtt = mqtt;
  }

  onEvent(listener: EventListener): void {
    this.listeners.push(listener);
  }

  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    const redisOpts = { maxRetriesPerRequest: null, lazyConnect: true } as const;
    this.redis = new Redis(this.opts.redisUrl, redisOpts);
    this.blocking = new Redis(this.opts.redisUrl, redisOpts);
    for (const r of [this.redis, this.blocking]) r.on('error', (e: Error) => this.redisProblem(e));
    await Promise.all([this.redis.connect(), this.blocking.connect()]);
    if (this.opts.mqtt) {
      this.publisher = new MqttPublisher({ log: this.log, ...this.opts.mqtt }).start();
      // Give the broker a moment so that the first events go out one by one rather than being
      // coalesced per topic; a broker that is not there only delays the start by this much.
      await this.publisher.waitConnected(3000);
    }
    await this.poll();
    const every = (ms: number, fn: () => Promise<void> | void): void => {
      let busy = false;
      this.timers.push(setInterval(() => {
        if (busy || this.stopped) return;
        busy = true;
        Promise.resolve(fn()).catch((e: unknown) => this.redisProblem(e as Error)).finally(() => (busy = false));
      }, ms));
    };
    every(this.opts.pollIntervalMs ?? 2000, () => this.poll());
    every(this.opts.statsIntervalMs ?? 2000, () => this.publishStats());
    this.tailDone = this.tail();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    this.blocking?.disconnect();
    await this.tailDone?.catch(() => undefined);
    this.redis?.disconnect();
    await this.publisher?.stop();
    this.redis = this.blocking = this.publisher = undefined;
  }

  private redisProblem(e: Error): void {
    if (this.stopped || this.redisWarned) return;
    this.redisWarned = true;
    this.log(`telemetry: Redis ${maskUrl(this.opts.redisUrl)}: ${e.message} (retrying)`);
  }

  // ---- what the dashboard server and the metrics read ----

  apps(): string[] {
    return [...this.appStates.keys()].sort();
  }

  stats(app: string): AppStats | undefined {
    return this.appStates.get(app)?.stats;
  }

  mapping(app: string): MappingRecord | undefined {
    return this.appStates.get(app)?.mapping;
  }

  nodes(): NodeMessage[] {
    return [...this.nodeCache.values()].sort((a, b) => a.node.localeCompare(b.node));
  }

  /** Total events read from Redis so far (all apps). */
  get eventCount(): number {
    return this.eventsSeen;
  }

  get mqtt(): MqttPublisher | undefined {
    return this.publisher;
  }

  /** Every fitted link profile in Redis. */
  async links(): Promise<LinkProfile[]> {
    const redis = this.redis;
    if (!redis) return [];
    const keys = await this.scan(`${this.keys.prefix}link:*:fit`);
    if (keys.length === 0) return [];
    const values = await redis.mget(...keys);
    return values.flatMap((v) => {
      try {
        return v ? [JSON.parse(v) as LinkProfile] : [];
      } catch {
        return [];
      }
    });
  }

  // ---- Redis -> state -> MQTT ----

  private async scan(match: string): Promise<string[]> {
    return this.redis ? scanKeys(this.redis, match) : [];
  }

  private async discoverApps(): Promise<string[]> {
    if (this.opts.apps) return this.opts.apps;
    const names = new Set(await this.redis!.smembers(this.keys.apps()));
    // The set is the fast path; a SCAN now and then also finds apps deployed by older tools.
    if (this.polls % 5 === 0) {
      const p = this.keys.prefix;
      for (const suffix of ['events', 'mapping']) {
        for (const key of await this.scan(`${p}app:*:${suffix}`)) {
          names.add(key.slice(`${p}app:`.length, -`:${suffix}`.length));
        }
      }
    }
    return [...names].filter((n) => n && !n.includes(':'));
  }

  private async addApp(name: string): Promise<void> {
    const stream = this.keys.events(name);
    const last = (await this.redis!.xrevrange(stream, '+', '-', 'COUNT', 1))[0]?.[0] ?? '0-0';
    this.appStates.set(name, {
      name,
      stream,
      cursor: '0-0',
      replayUntil: last,
      replaying: last !== '0-0',
      lastOfTask: new Map(),
      stats: new AppStats(name, this.opts.windowSec),
    });
  }

  private async poll(): Promise<void> {
    const redis = this.redis;
    if (!redis || this.stopped) return;
    const names = await this.discoverApps();
    for (const name of names) {
      if (!this.appStates.has(name)) await this.addApp(name);
    }
    await this.dropTornDown(new Set(names));
    await this.pollMappings();
    await this.pollRemaps();
    await this.pollNodes();
    this.polls += 1;
  }

  /**
   * Apps torn down since the last poll (gone from the apps set, no mapping or event stream left): forget them
   * and clear their retained topics, so that new subscribers get nothing of a removed app.
   */
  private async dropTornDown(names: Set<string>): Promise<void> {
    if (this.opts.apps) return;
    for (const s of [...this.appStates.values()]) {
      if (names.has(s.name) || (await this.redis!.exists(this.keys.mapping(s.name), s.stream)) > 0) continue;
      this.appStates.delete(s.name);
      const tasks = s.mapping ? (s.mapping.dag ? s.mapping.dag.tasks.map((t) => t.name) : Object.keys(s.mapping.mapping)) : [];
      const known = [topics.mapping(s.name), topics.stats(s.name), topics.remap(s.name), ...tasks.map((t) => topics.task(s.name, t))];
      const n = this.publisher?.clearRetained(topics.appAll(s.name).slice(0, -1), known) ?? 0;
      this.log(`telemetry: ${s.name} was torn down; cleared ${n} retained topic(s)`);
    }
  }

  private async pollMappings(): Promise<void> {
    const states = [...this.appStates.values()];
    if (states.length === 0) return;
    const values = await this.redis!.mget(...states.map((s) => this.keys.mapping(s.name)));
    states.forEach((s, i) => {
      const json = values[i];
      if (!json || json === s.mappingJson) return;
      let rec: MappingRecord;
      try {
        rec = JSON.parse(json) as MappingRecord;
      } catch {
        return;
      }
      // A new deployment of the same app starts its statistics afresh (metrics stay monotonic).
      if (s.mapping && s.mapping.ts !== rec.ts) s.stats = new AppStats(s.name, this.opts.windowSec);
      s.mappingJson = json;
      s.mapping = rec;
      s.stats.declareTasks(rec.dag ? rec.dag.tasks.map((t) => t.name) : Object.keys(rec.mapping));
      this.publisher?.publish(topics.mapping(s.name), mappingMessage(rec), { retain: true });
      if (this.opts.mqtt?.compat) this.publisher?.publish(COMPAT_TOPIC, compatMappingLine(rec));
    });
  }

  /** The newest re-map event of each app (orchestrator/adapt/events.ts), retained. */
  private async pollRemaps(): Promise<void> {
    const states = [...this.appStates.values()];
    if (states.length === 0 || !this.publisher) return;
    const pipe = pipeline(this.redis!);
    for (const s of states) pipe.lindex(this.keys.remaps(s.name), 0);
    const out = (await pipe.exec()) ?? [];
    states.forEach((s, i) => {
      const json = out[i]?.[1] as string | null;
      if (!json || json === s.remapJson) return;
      s.remapJson = json;
      try {
        this.publisher?.publish(topics.remap(s.name), JSON.parse(json) as RemapMessage, { retain: true });
      } catch {
        // a half-written entry: the next poll sees the whole one
        s.remapJson = undefined;
      }
    });
  }

  private async pollNodes(): Promise<void> {
    const redis = this.redis!;
    const names = new Set(await redis.smembers(this.keys.nodes()));
    const resPrefix = this.keys.resources('');
    if (this.polls % 5 === 0 || names.size === 0) {
      for (const key of await this.scan(`${resPrefix}*`)) names.add(key.slice(resPrefix.length));
    }
    for (const n of this.nodeCache.keys()) names.add(n);
    if (names.size === 0) return;
    const list = [...names].sort();
    const pipe = pipeline(redis);
    for (const n of list) pipe.hget(this.keys.resources(n), 'json').exists(this.keys.node(n));
    const out = (await pipe.exec()) ?? [];
    const now = Date.now();
    list.forEach((node, i) => {
      const json = out[2 * i]?.[1] as string | null;
      const alive = (out[2 * i + 1]?.[1] as number) === 1;
      let r: Partial<NodeResources> = {};
      try {
        if (json) r = JSON.parse(json) as NodeResources;
      } catch {
        // a half-written report: keep the previous values
        r = {};
      }
      const prev = this.nodeCache.get(node);
      const msg: NodeMessage = {
        node,
        alive: alive || (r.updatedAt !== undefined && now - r.updatedAt < 15_000),
        heartbeatAt: r.updatedAt ?? prev?.heartbeatAt ?? 0,
        cpuPercent: r.cpuPercent ?? prev?.cpuPercent ?? null,
        memPercent: r.memPercent ?? prev?.memPercent ?? null,
        cores: r.cores ?? prev?.cores ?? null,
        load1: r.load1 ?? prev?.load1 ?? null,
        freeMemBytes: r.freeMemBytes ?? prev?.freeMemBytes ?? null,
        ts: now,
      };
      this.nodeCache.set(node, msg);
      this.publisher?.publish(topics.node(node), msg, { retain: true });
    });
    const live = list.filter((_, i) => (out[2 * i + 1]?.[1] as number) === 1);
    const health = await readNetworkHealth(redis, this.keys, live, now);
    if (health.paths.length > 0 && this.publisher) {
      const msg: FaultsMessage = { faults: health.faults.map(({ hitRatio: _h, ...f }) => f), links: health.paths.map(({ from, to, sent, lost }) => ({ from, to, sent, lost })), ts: now };
      this.publisher.publish(topics.faults(), msg, { retain: true });
    }
  }

  private publishStats(): void {
    if (!this.publisher) return;
    for (const s of this.appStates.values()) {
      this.publisher.publish(topics.stats(s.name), s.stats.snapshot(), { retain: true });
    }
  }

  /** Statistics of every app published now (the server calls this after a burst in tests). */
  flushStats(): void {
    this.publishStats();
  }

  private async tail(): Promise<void> {
    while (!this.stopped) {
      const states = [...this.appStates.values()];
      if (states.length === 0) {
        await new Promise((r) => setTimeout(r, Math.min(200, this.opts.blockMs ?? 1000)));
        continue;
      }
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        // Apps that are still catching up are read without blocking.
        const block = states.some((s) => s.replaying) ? [] : ['BLOCK', this.opts.blockMs ?? 1000];
        reply = streamReply(await this.blocking!.call(
          'XREAD', 'COUNT', READ_COUNT, ...block,
          'STREAMS', ...states.map((s) => s.stream), ...states.map((s) => s.cursor),
        ));
      } catch (e) {
        if (this.stopped) return;
        this.redisProblem(e as Error);
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      const byStream = new Map(states.map((s) => [s.stream, s]));
      for (const [stream, entries] of reply ?? []) {
        const s = byStream.get(stream);
        if (!s) continue;
        for (const [id, fields] of entries) {
          s.cursor = id;
          const json = fields[fields.indexOf('json') + 1];
          if (json !== undefined && fields.includes('json')) this.handle(s, id, json);
        }
      }
      for (const s of states) {
        if (s.replaying && (compareIds(s.cursor, s.replayUntil) >= 0 || !reply?.some(([k]) => k === s.stream))) this.endReplay(s);
      }
    }
  }

  private handle(s: AppState, id: string, json: string): void {
    let ev: AppEvent;
    try {
      ev = JSON.parse(json) as AppEvent;
    } catch {
      return;
    }
    this.eventsSeen += 1;
    s.stats.add(ev);
    for (const l of this.listeners) l(ev);
    if (ev.type === 'item-done') return;
    if (s.replaying && compareIds(id, s.replayUntil) <= 0) {
      s.lastOfTask.set(ev.task, ev);
      return;
    }
    this.publisher?.publish(topics.task(s.name, ev.task), taskMessage(ev), { retain: true });
    if (this.opts.mqtt?.compat) {
      const line = compatTaskLine(ev);
      if (line) this.publisher?.publish(COMPAT_TOPIC, line);
    }
  }

  private endReplay(s: AppState): void {
    s.replaying = false;
    for (const ev of s.lastOfTask.values()) this.publisher?.publish(topics.task(s.name, ev.task), taskMessage(ev), { retain: true });
    s.lastOfTask.clear();
    this.publisher?.publish(topics.stats(s.name), s.stats.snapshot(), { retain: true });
  }
}
