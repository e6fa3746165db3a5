// The telemetry bridge against real Redis and real brokers (embedded aedes, Debian's mosquitto):
// topics and payloads (checked against the JSON schemas), the compatibility topic, catch-up,
// credentials, and a broker that goes away mid-run.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import mqtt, { type MqttClient } from 'mqtt';
import { Ajv } from 'ajv';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { haveMosquitto, startMosquitto, type TestMosquitto } from '../support/mosquitto.js';
import { repoRoot } from '../support/paths.js';
import { MqttBroker } from '../../orchestrator/stack/mqtt-broker.js';
import { TelemetryBridge } from '../../orchestrator/telemetry/bridge.js';
import { redisKeys } from '../../config/redis-keys.js';
import { teardownAppKeys } from '../../circe/queue/teardown.js';
import { forgetApp } from '../../orchestrator/deploy/record.js';
import {
  SEVEN, emptyTally, itemEvents, mappingRecord, writeDeployment, writeNodes, xaddEvents,
} from '../dashboard/feed.js';

const PREFIX = 'jupiter:';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const fast = { statsIntervalMs: 200, pollIntervalMs: 200, blockMs: 200 };

interface Got {
  topic: string;
  text: string;
  retain: boolean;
}

async function subscriber(url: string, filters: string[], auth: { username?: string; password?: string } = {}): Promise<{ client: MqttClient; got: Got[] }> {
  const client = await mqtt.connectAsync(url, { ...auth, reconnectPeriod: 200 });
  const got: Got[] = [];
  client.on('message', (topic, payload, packet) => got.push({ topic, text: payload.toString(), retain: packet.retain }));
  await client.subscribeAsync(filters);
  return { client, got };
}

async function until(what: string, fn: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

function schema(name: string): object {
  return JSON.parse(readFileSync(join(repoRoot, 'orchestrator/telemetry/schemas', `${name}.schema.json`), 'utf8')) as object;
}

interface Broker {
  url: string;
  stop(): Promise<void>;
  restart(): Promise<void>;
  dispose(): Promise<void>;
}

async function startBroker(kind: 'aedes' | 'mosquitto', auth: { username?: string; password?: string } = {}): Promise<Broker> {
  if (kind === 'aedes') {
    const b = await new MqttBroker(auth).start();
    return { url: b.tcpUrl, stop: () => b.stop(), restart: async () => void (await b.start()), dispose: () => b.stop() };
  }
  const m: TestMosquitto = await startMosquitto(auth);
  return { url: m.tcpUrl, stop: () => m.stop(), restart: () => m.start(), dispose: () => m.dispose() };
}

for (const kind of ['aedes', 'mosquitto'] as const) {
  describe(`telemetry bridge (${kind})`, function () {
    this.timeout(60_000);
    let redis: TestRedis;
    let client: Redis;

    before(async function () {
      if (kind === 'mosquitto' && !haveMosquitto()) this.skip();
      redis = await startTestRedis();
      client = new Redis(redis.url);
    });

    after(async () => {
      client?.disconnect();
      await redis?.stop();
    });

    beforeEach(async () => {
      await client?.flushall();
    });

    it('clears the retained topics of an app once it is torn down: new subscribers get nothing of it', async () => {
      const broker = await startBroker(kind);
      await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
      await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'i1', Date.now(), {}, emptyTally(SEVEN.tasks)));
      const bridge = new TelemetryBridge({ redisUrl: redis.url, prefix: PREFIX, ...fast, mqtt: { url: broker.url }, log: () => undefined });
      /** Topics of the app a fresh subscriber gets as retained messages (after a quiet spell). */
      const retained = async (): Promise<string[]> => {
        const sub = await subscriber(broker.url, [`jupiter/${SEVEN.app}/#`]);
        await sleep(300);
        await sub.client.endAsync();
        return sub.got.filter((g) => g.retain && g.text !== '').map((g) => g.topic).sort();
      };
      try {
        await bridge.start();
        // Polls of a fresh subscriber (each waits 300 ms), until the bridge has published them all.
        let seen: string[] = [];
        for (let i = 0; i < 40 && !(seen.includes(`jupiter/${SEVEN.app}/stats`) && seen.some((t) => t.includes('/tasks/'))); i++) seen = await retained();
        expect(seen).to.include(`jupiter/${SEVEN.app}/mapping`);
        expect(seen.some((t) => t.startsWith(`jupiter/${SEVEN.app}/tasks/`))).to.equal(true);
        // What `jupiter teardown` does to Redis.
        await teardownAppKeys(client, PREFIX, SEVEN.app);
        await forgetApp(client, PREFIX, SEVEN.app);
        for (let i = 0; i < 40 && seen.length > 0; i++) seen = await retained();
        expect(seen).to.deep.equal([]);
        expect(bridge.apps()).to.not.include(SEVEN.app);
      } finally {
        await bridge.stop();
        await broker.dispose();
      }
    });

    it('publishes mapping, task events, nodes and stats that match their JSON schemas, and the compat topic', async () => {
      const broker = await startBroker(kind);
      const sub = await subscriber(broker.url, ['jupiter/#', 'JUPITER']);
      const rec = mappingRecord(SEVEN);
      await writeDeployment(client, PREFIX, rec);
      await writeNodes(client, PREFIX, ['node1', 'node2', 'node3']);
      const bridge = new TelemetryBridge({ redisUrl: redis.url, prefix: PREFIX, ...fast, mqtt: { url: broker.url, compat: true }, log: () => undefined });
      try {
        await bridge.start();
        const tally = emptyTally(SEVEN.tasks);
        for (let i = 1; i <= 5; i++) await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, `i${i}`, Date.now(), i === 2 ? { retryAt: 'detect' } : i === 4 ? { failAt: 'merge' } : {}, tally));
        const statsDone = (): boolean => sub.got.some((g) => g.topic === 'jupiter/camera/stats' && (JSON.parse(g.text) as { itemsDone: number }).itemsDone === tally.itemsDone);
        await until('stats with every item', statsDone);

        const ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
        const check = { mapping: ajv.compile(schema('mapping')), task: ajv.compile(schema('task')), node: ajv.compile(schema('node')), stats: ajv.compile(schema('stats')) };
        const byKind = (re: RegExp): Got[] => sub.got.filter((g) => re.test(g.topic));
        const mappingMsgs = byKind(/^jupiter\/camera\/mapping$/);
        expect(mappingMsgs).to.have.length.greaterThan(0);
        for (const g of mappingMsgs) expect(check.mapping(JSON.parse(g.text)), JSON.stringify(check.mapping.errors)).to.equal(true);
        const m = JSON.parse(mappingMsgs[0]!.text) as { mapping: Record<string, string>; dag: { tasks: unknown[] }; predictedMakespanSec: number };
        expect(m.mapping).to.deep.equal(SEVEN.mapping);
        expect(m.dag.tasks).to.have.length(7);
        expect(m.predictedMakespanSec).to.equal(rec.predictedMakespan);

        const taskMsgs = byKind(/^jupiter\/camera\/tasks\//);
        // every task event of the stream, in order per task
        expect(taskMsgs).to.have.length(tally.events - tally.itemsDone);
        for (const g of taskMsgs) expect(check.task(JSON.parse(g.text)), JSON.stringify(check.task.errors)).to.equal(true);
        const ingest = taskMsgs.filter((g) => g.topic === 'jupiter/camera/tasks/ingest').map((g) => (JSON.parse(g.text) as { event: string }).event);
        expect(ingest.slice(0, 3)).to.deep.equal(['enter', 'start', 'finish']);
        const fails = taskMsgs.map((g) => JSON.parse(g.text) as { event: string; final?: boolean; task: string }).filter((t) => t.event === 'fail');
        expect(fails.map((f) => [f.task, f.final])).to.deep.equal([['detect', false], ['merge', true]]);

        const nodeMsgs = byKind(/^jupiter\/nodes\//);
        expect(new Set(nodeMsgs.map((g) => g.topic))).to.deep.equal(new Set(['jupiter/nodes/node1', 'jupiter/nodes/node2', 'jupiter/nodes/node3']));
        for (const g of nodeMsgs) expect(check.node(JSON.parse(g.text)), JSON.stringify(check.node.errors)).to.equal(true);
        const n2 = JSON.parse(nodeMsgs.find((g) => g.topic === 'jupiter/nodes/node2')!.text) as { cpuPercent: number; alive: boolean };
        expect(n2).to.include({ cpuPercent: 45, alive: true });

        const statsMsgs = byKind(/^jupiter\/camera\/stats$/);
        for (const g of statsMsgs) expect(check.stats(JSON.parse(g.text)), JSON.stringify(check.stats.errors)).to.equal(true);
        const last = JSON.parse(statsMsgs.find((g) => (JSON.parse(g.text) as { itemsDone: number }).itemsDone === tally.itemsDone)!.text) as {
          itemsFailed: number; tasks: Record<string, { processed: number; failed: number; failedAttempts: number; waiting: number; running: number }>; makespanP50Sec: number;
        };
        expect(last.itemsFailed).to.equal(1);
        for (const t of SEVEN.tasks) {
          expect(last.tasks[t.name], t.name).to.include({ processed: tally.processed[t.name], failed: tally.failed[t.name], failedAttempts: tally.failedAttempts[t.name], waiting: 0, running: 0 });
        }
        expect(last.makespanP50Sec).to.be.greaterThan(0);

        // the original's plain-text topic
        const compat = sub.got.filter((g) => g.topic === 'JUPITER').map((g) => g.text);
        expect(compat[0]).to.match(/^mappings ingest:node1:\d{10} decode:node2:\d{10} /);
        expect(compat[0]!.split(' ')).to.have.length(8);
        expect(compat).to.include('ingest starts').and.to.include('ingest ends');
        expect(compat.filter((l) => l === 'store ends')).to.have.length(tally.processed.store!);
        expect(compat.filter((l) => / starts$/.test(l))).to.have.length(Object.values(tally.processed).reduce((a, b) => a + b, 0) + 2);

        // retained: a late subscriber gets the mapping, each task's last event, nodes and stats at once
        const late = await subscriber(broker.url, ['jupiter/#']);
        const retainedTopics = (): Set<string> => new Set(late.got.filter((g) => g.retain).map((g) => g.topic));
        await until('retained messages', () => retainedTopics().size >= 1 + 7 + 3 + 1);
        expect([...retainedTopics()].sort()).to.deep.equal([
          'jupiter/camera/mapping', 'jupiter/camera/stats', ...SEVEN.tasks.map((t) => `jupiter/camera/tasks/${t.name}`), 'jupiter/nodes/node1', 'jupiter/nodes/node2', 'jupiter/nodes/node3',
        ].sort());
        const lastIngest = late.got.find((g) => g.topic === 'jupiter/camera/tasks/store');
        expect((JSON.parse(lastIngest!.text) as { event: string; item: string })).to.include({ event: 'finish', item: 'i5' });
        await late.client.endAsync();
      } finally {
        await bridge.stop();
        await sub.client.endAsync();
        await broker.dispose();
      }
    });

    it('keeps reading events and never blocks with the broker stopped mid-run; reconnects and resends retained topics', async () => {
      const broker = await startBroker(kind);
      await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
      const warnings: string[] = [];
      const bridge = new TelemetryBridge({
        redisUrl: redis.url, prefix: PREFIX, ...fast,
        mqtt: { url: broker.url, bufferLimit: 100, reconnectMs: 200 }, log: (l) => warnings.push(l),
      });
      try {
        await bridge.start();
        const tally = emptyTally(SEVEN.tasks);
        await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'a0', Date.now(), {}, tally));
        await until('first events read', () => bridge.eventCount === tally.events);
        await until('published', () => (bridge.mqtt?.counts().published ?? 0) > 0);

        await broker.stop();
        await until('publisher notices', () => bridge.mqtt?.connected === false);
        // A run goes on without the broker: 200 items, 4400 events, written as fast as Redis takes them.
        const t0 = Date.now();
        for (let i = 1; i <= 200; i++) await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, `b${i}`, Date.now(), {}, tally));
        const writeMs = Date.now() - t0;
        await until('every event read while the broker is down', () => bridge.eventCount === tally.events, 20_000);
        expect(bridge.stats(SEVEN.app)!.snapshot().itemsDone).to.equal(201);
        // Task topics are retained, so an outage keeps just each task's latest message.
        const c = bridge.mqtt!.counts();
        expect(c.buffered).to.be.at.most(100);
        expect(c.retainedTopics).to.be.at.most(1 + 7 + 1);
        expect(warnings.filter((w) => /unreachable/.test(w))).to.have.length(1);
        // Publishing is synchronous and bounded: 10 000 more messages take no time and no memory.
        const p0 = Date.now();
        for (let i = 0; i < 10_000; i++) bridge.mqtt!.publish('jupiter/test/flood', { i });
        const floodMs = Date.now() - p0;
        expect(bridge.mqtt!.counts().buffered).to.be.at.most(100);
        expect(bridge.mqtt!.counts().dropped).to.be.at.least(9_900);
        console.log(`      broker down: 4400 events written in ${writeMs} ms and all read; 10 000 publishes returned in ${floodMs} ms; dropped ${bridge.mqtt!.counts().dropped}`);

        await broker.restart();
        await until('reconnected', () => bridge.mqtt?.connected === true, 15_000);
        // The restarted broker lost its retained messages: the bridge sends them again.
        const late = await subscriber(broker.url, ['jupiter/camera/mapping', 'jupiter/camera/tasks/+']);
        await until('retained mapping and task states after the restart', () => late.got.filter((g) => g.retain).length >= 8);
        await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'c1', Date.now(), {}, tally));
        await until('live events after the restart', () => late.got.some((g) => !g.retain && g.text.includes('"item":"c1"')));
        expect(warnings.filter((w) => /unreachable/.test(w))).to.have.length(1);
        await late.client.endAsync();
      } finally {
        await bridge.stop();
        await broker.dispose();
      }
    });

    it('logs in with a user name and password; with wrong ones it warns once and goes on', async () => {
      const auth = { username: 'jupiter', password: 's3cret' };
      const broker = await startBroker(kind, auth);
      await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
      const sub = await subscriber(broker.url, ['jupiter/#'], auth);
      const good = new TelemetryBridge({ redisUrl: redis.url, prefix: PREFIX, ...fast, mqtt: { url: broker.url, ...auth }, log: () => undefined });
      const badLog: string[] = [];
      const bad = new TelemetryBridge({ redisUrl: redis.url, prefix: PREFIX, ...fast, mqtt: { url: broker.url, username: 'jupiter', password: 'wrong', reconnectMs: 100 }, log: (l) => badLog.push(l) });
      try {
        await good.start();
        await bad.start();
        const tally = emptyTally(SEVEN.tasks);
        await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'x1', Date.now(), {}, tally));
        await until('messages through the authenticated bridge', () => sub.got.some((g) => g.text.includes('"item":"x1"')));
        await until('the other bridge read the events too', () => bad.eventCount === tally.events);
        await sleep(600); // several reconnect attempts
        expect(bad.mqtt?.connected).to.equal(false);
        expect(badLog).to.have.length(1);
        expect(badLog[0]).to.match(/unreachable/).and.not.to.include('wrong');
      } finally {
        await good.stop();
        await bad.stop();
        await sub.client.endAsync();
        await broker.dispose();
      }
    });
  });
}

describe('telemetry bridge catch-up', function () {
  this.timeout(30_000);
  it('counts history found at start and publishes only each task\'s last event', async () => {
    const redis = await startTestRedis();
    const client = new Redis(redis.url);
    const broker = await new MqttBroker().start();
    try {
      await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
      const tally = emptyTally(SEVEN.tasks);
      for (let i = 0; i < 20; i++) await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, `h${i}`, Date.now(), {}, tally));
      const sub = await subscriber(broker.tcpUrl, ['jupiter/camera/tasks/+']);
      const bridge = new TelemetryBridge({ redisUrl: redis.url, prefix: PREFIX, ...fast, mqtt: { url: broker.tcpUrl }, log: () => undefined });
      await bridge.start();
      await until('history read', () => bridge.eventCount === tally.events);
      await until('last events published', () => sub.got.length >= 7);
      await sleep(300);
      expect(sub.got).to.have.length(7);
      expect(sub.got.map((g) => (JSON.parse(g.text) as { item: string }).item)).to.satisfy((items: string[]) => items.every((i) => i === 'h19'));
      expect(bridge.stats(SEVEN.app)!.snapshot().itemsDone).to.equal(20);
      // then live events flow one by one
      await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'live', Date.now(), {}, tally));
      await until('live events', () => sub.got.length === 7 + 21);
      await bridge.stop();
      await sub.client.endAsync();
      expect(await client.exists(redisKeys(PREFIX).events(SEVEN.app))).to.equal(1);
    } finally {
      client.disconnect();
      await broker.stop();
      await redis.stop();
    }
  });
});
