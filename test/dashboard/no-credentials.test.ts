// The broker's credentials stay on the server: with brokers that require a user name and password
// (aedes with an authenticate hook, Debian's mosquitto with a password file), Chromium gets the
// live dashboard through the dashboard's /live WebSocket, and nothing it receives (any HTTP
// response, header or WebSocket frame) nor /config.json holds the user name, the password or a
// broker address. Also: /live's protocol (snapshot on connect, app switching, other sites
// refused) and the page through a broker outage.
import { expect } from 'chai';
import { Redis } from 'ioredis';
import mqtt from 'mqtt';
import type { Page } from 'playwright-core';
import { WebSocket } from 'ws';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { haveMosquitto, startMosquitto, type TestMosquitto } from '../support/mosquitto.js';
import { haveChromium, launchChromium, type TestBrowser } from '../support/chromium.js';
import { DashboardServer } from '../../orchestrator/dashboard/server.js';
import { MqttBroker } from '../../orchestrator/stack/mqtt-broker.js';
import { SEVEN, emptyTally, itemEvents, mappingRecord, writeDeployment, writeNodes, xaddEvents } from './feed.js';

const PREFIX = 'jupiter:';
const USER = 'dash-user-4e7b19';
const PASS = 'Pw-9c1e-s3cr3t-77a0';
const fast = { statsIntervalMs: 250, pollIntervalMs: 250, blockMs: 200 };

interface Broker {
  tcpUrl: string;
  ports: number[];
  stop(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

async function aedesWithPassword(): Promise<Broker> {
  const b = await new MqttBroker({ username: USER, password: PASS }).start();
  return { tcpUrl: b.tcpUrl, ports: [b.port, b.wsPort], stop: () => b.stop(), start: async () => void (await b.start()), dispose: () => b.stop() };
}

async function mosquittoWithPassword(): Promise<Broker> {
  const m: TestMosquitto = await startMosquitto({ username: USER, password: PASS });
  return { tcpUrl: m.tcpUrl, ports: [m.port, m.wsPort], stop: () => m.stop(), start: () => m.start(), dispose: () => m.dispose() };
}

/** Everything the browser receives, as text. */
interface Received {
  http: string[];
  frames: string[];
  socketUrls: string[];
}

function record(page: Page): Received {
  const got: Received = { http: [], frames: [], socketUrls: [] };
  page.on('response', (res) => {
    got.http.push(`${res.url()} ${JSON.stringify(res.headers())}`);
    res.text().then((t) => got.http.push(t), () => undefined);
  });
  page.on('websocket', (ws) => {
    got.socketUrls.push(ws.url());
    ws.on('framereceived', (f) => got.frames.push(f.payload.toString()));
    ws.on('framesent', (f) => got.frames.push(f.payload.toString()));
  });
  return got;
}

async function waitState(page: Page, task: string, state: string): Promise<void> {
  await page.waitForSelector(`#dag g.task[data-task="${task}"][data-state="${state}"]`, { timeout: 10_000 });
}

for (const kind of ['aedes', 'mosquitto'] as const) {
  describe(`dashboard with a password-protected ${kind} broker: no credential reaches the browser`, function () {
    this.timeout(90_000);
    let redis: TestRedis;
    let client: Redis;
    let broker: Broker;
    let server: DashboardServer;
    let browser: TestBrowser;
    let page: Page;
    let got: Received;
    const tally = emptyTally(SEVEN.tasks);

    before(async function () {
      if (!haveChromium() || (kind === 'mosquitto' && !haveMosquitto())) this.skip();
      redis = await startTestRedis();
      client = new Redis(redis.url);
      await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
      await writeNodes(client, PREFIX, ['node1', 'node2', 'node3']);
      broker = kind === 'aedes' ? await aedesWithPassword() : await mosquittoWithPassword();
      server = await new DashboardServer({
        redisUrl: redis.url, prefix: PREFIX, bridge: fast, log: () => undefined,
        mqtt: { url: broker.tcpUrl, username: USER, password: PASS },
      }).start();
      browser = await launchChromium();
      page = await browser.newPage();
      got = record(page);
      await page.goto(server.url);
    });

    after(async () => {
      await browser?.close();
      await server?.stop();
      await broker?.dispose();
      client?.disconnect();
      await redis?.stop();
    });

    it('the broker really requires the password', async () => {
      const anon = mqtt.connectAsync(broker.tcpUrl, { reconnectPeriod: 0, connectTimeout: 5000 });
      let refused = false;
      await anon.then((c) => c.endAsync(), () => (refused = true));
      expect(refused).to.equal(true);
    });

    it('shows the placement and live task states', async () => {
      await page.waitForSelector('body[data-connected="true"]', { timeout: 15_000 });
      await page.waitForFunction((n) => document.querySelectorAll('#dag g.task').length === n, SEVEN.tasks.length, { timeout: 15_000 });
      for (const t of SEVEN.tasks) {
        expect(await page.getAttribute(`#dag g.task[data-task="${t.name}"]`, 'data-node')).to.equal(SEVEN.mapping[t.name]);
      }
      await page.waitForFunction(() => document.querySelectorAll('#gantt g.gantt-bar').length > 0);
      const evs = itemEvents(SEVEN, 'item-1', Date.now(), {}, tally);
      await xaddEvents(client, PREFIX, SEVEN.app, evs.slice(0, 2));
      await waitState(page, 'ingest', 'running');
      await xaddEvents(client, PREFIX, SEVEN.app, evs.slice(2));
      await waitState(page, 'store', 'done');
      await page.waitForFunction(() => document.getElementById('kpi-done')?.textContent === '1', undefined, { timeout: 10_000 });
    });

    it('gives the browser no user name, password or broker address', async () => {
      expect(got.frames.length, 'the page got its data over /live').to.be.greaterThan(2);
      const port = new URL(server.url).port;
      // one socket, to the dashboard itself (no app yet: the page picks the first mapping it gets)
      expect(got.socketUrls).to.deep.equal([`ws://127.0.0.1:${port}/live`]);
      const everything = [...got.http, ...got.frames, ...got.socketUrls].join('\n');
      expect(everything).to.include('"topic":"jupiter/camera/tasks/store"'); // the scan sees real content
      expect(everything).not.to.include(PASS);
      expect(everything).not.to.include(USER);
      expect(everything).not.to.match(/mqtts?:\/\//);
      const addressed = [...everything.matchAll(/(?:127\.0\.0\.1|localhost|\[::1\]):(\d+)/g)].map((m) => Number(m[1]));
      for (const p of broker.ports) expect(addressed).not.to.include(p);
      expect(new Set(addressed)).to.deep.equal(new Set([Number(port)]));
      // and what any client (not only this page) can fetch
      const cfg = (await (await fetch(new URL('/config.json', server.url))).json()) as Record<string, unknown>;
      expect(cfg).to.deep.equal({ app: null, apps: [SEVEN.app] });
      for (const path of ['/', '/static/app.js', '/config.json', '/metrics', '/healthz']) {
        const text = await (await fetch(new URL(path, server.url))).text();
        expect(text, path).not.to.include(PASS);
        expect(text, path).not.to.include(USER);
      }
    });

    if (kind === 'aedes') {
      it('shows the broker offline while it is down, then live again', async () => {
        await broker.stop();
        await page.waitForSelector('body[data-connected="false"]', { timeout: 10_000 });
        expect(await page.textContent('#conn-text')).to.match(/broker offline/);
        await broker.start();
        await page.waitForSelector('body[data-connected="true"]', { timeout: 15_000 });
        await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'item-2', Date.now(), {}, tally));
        await page.waitForFunction(() => document.getElementById('kpi-done')?.textContent === '2', undefined, { timeout: 10_000 });
      });
    }
  });
}

/** Open /live and collect what arrives. */
async function openLive(url: string, headers: Record<string, string> = {}): Promise<{ ws: WebSocket; entries: Array<Record<string, unknown>> }> {
  const ws = new WebSocket(url, { headers });
  const entries: Array<Record<string, unknown>> = [];
  ws.on('message', (d: Buffer) => entries.push(...(JSON.parse(d.toString()) as Array<Record<string, unknown>>)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return { ws, entries };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(ok(), what).to.equal(true);
}

describe('the /live WebSocket', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let client: Redis;
  let server: DashboardServer;
  let live: string;
  const topicsOf = (entries: Array<Record<string, unknown>>): string[] => entries.filter((e) => e.topic).map((e) => e.topic as string);

  before(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    const other = { ...SEVEN, app: 'other' };
    await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
    await writeDeployment(client, PREFIX, mappingRecord(other));
    const tally = emptyTally(SEVEN.tasks);
    await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'a', Date.now(), {}, tally));
    await xaddEvents(client, PREFIX, 'other', itemEvents(other, 'b', Date.now(), {}, emptyTally(SEVEN.tasks)));
    server = await new DashboardServer({ redisUrl: redis.url, prefix: PREFIX, bridge: fast, log: () => undefined }).start();
    live = new URL('/live', server.url.replace(/^http/, 'ws')).href;
  });

  after(async () => {
    await server?.stop();
    client?.disconnect();
    await redis?.stop();
  });

  it('sends what is remembered on connect: every mapping, and the chosen app\'s tasks and stats', async () => {
    const { ws, entries } = await openLive(`${live}?app=${SEVEN.app}`);
    try {
      await until('the retained state of camera', () => SEVEN.tasks.every((t) => topicsOf(entries).includes(`jupiter/camera/tasks/${t.name}`)));
      expect(entries[0]).to.have.property('status');
      await until('the broker connected', () => entries.some((e) => (e.status as { broker?: boolean } | undefined)?.broker === true));
      const topics = topicsOf(entries);
      expect(topics).to.include.members(['jupiter/camera/mapping', 'jupiter/other/mapping']);
      expect(topics.filter((t) => t.startsWith('jupiter/other/') && t !== 'jupiter/other/mapping')).to.deep.equal([]);
      // switching app gets the other app's state at once, and only that
      const before = entries.length;
      ws.send(JSON.stringify({ app: 'other' }));
      await until('the retained state of other', () => topicsOf(entries.slice(before)).includes('jupiter/other/tasks/store'));
      expect(topicsOf(entries.slice(before)).every((t) => t.startsWith('jupiter/other/'))).to.equal(true);
    } finally {
      ws.close();
    }
  });

  it('refuses pages of other sites and paths other than /live', async () => {
    const host = new URL(server.url).host;
    const same = await openLive(live, { origin: `http://${host}` });
    same.ws.close();
    const proxied = await openLive(live, { origin: 'https://jupiter.example', 'x-forwarded-host': 'jupiter.example' });
    proxied.ws.close();
    const foreign = new WebSocket(live, { headers: { origin: 'https://evil.example' } });
    const status = await new Promise<number>((resolve) => foreign.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)));
    expect(status).to.equal(403);
    const other = new WebSocket(new URL('/mqtt', live).href);
    expect(await new Promise<number>((resolve) => other.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)))).to.equal(404);
  });
});
