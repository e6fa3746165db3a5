// The direct data path (circe/dataplane) with in-process runners on distinct nodes and a real
// Redis: files over INLINE_MAX stay on the producing node's store and are fetched from its data
// endpoint; Redis holds pointers only; outputs are exactly the central path's. Plus the data
// endpoint's refusals, the store's back-pressure and sweep, and a fetch that rides out an
// unreachable node.
import { expect } from 'chai';
import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createServer as createHttpServer, request } from 'node:http';
import { circeSuite } from '../support/circe-suite.js';
import { fixtureAppDir, specOf } from './support.js';
import { appKeys, configureApp, Sink, submitItems, TaskRunner, waitForItems, type PipelineSettings } from '../../circe/index.js';
import { DataPlane, ensureDataToken, SWEEP_GRACE_MS } from '../../circe/dataplane/plane.js';
import { DataServer } from '../../circe/dataplane/server.js';
import { releaseBody } from '../../circe/dataplane/client.js';
import { besideStore } from '../../circe/runner/work-slots.js';
import { NodeStore } from '../../circe/dataplane/store.js';
import { machineId } from '../../circe/runtime/machine.js';
import { readSettings } from '../../circe/queue/settings.js';
import { LINK_TRANSFER_MIN_BYTES, type LinkTransfer } from '../../config/link-transfers.js';

const PREFIX = 'jd:';
const ID = 'a'.repeat(40);

function get(port: number, path: string, token?: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('circe direct data path (in-process runners on distinct nodes, real Redis)', function () {
  this.timeout(60_000);
  const closables: Array<{ close(): Promise<void> }> = [];
  const rig = circeSuite({ workPrefix: 'jupiter-direct-', flushEach: true, closeEach: () => closables.splice(0) });

  async function run(dataPath: 'central' | 'direct'): Promise<{ outputs: Map<string, string>; stores: string }> {
    const app = specOf(fixtureAppDir('pyjoin'));
    await rig.client.flushall();
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000, dataPath });
    const out = join(rig.work, `out-${dataPath}`);
    const stores = join(rig.work, `stores-${dataPath}`);
    for (const t of app.tasks.filter((x) => x.isDag)) {
      closables.push(await TaskRunner.start({
        app, task: t, node: `node-${t.name}`, redisUrl: rig.redis.url, prefix: PREFIX, workDir: join(rig.work, `w-${dataPath}`), dataDir: join(stores, t.name),
      }));
    }
    closables.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    // 20 KB inputs: every file between tasks is over INLINE_MAX.
    const files = ['1a', '2b', '3c'].map((j, i) => {
      const p = join(rig.work, `${j}.txt`);
      writeFileSync(p, `${String(i).repeat(20_000)}\n`);
      return p;
    });
    const items = await submitItems(rig.client, PREFIX, app, files, { runId: dataPath });
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 30_000 });
    expect(res.every((r) => !r.failed)).to.equal(true);
    // Nothing of the blobs is left in Redis once every receiver took them.
    const k = appKeys(PREFIX, app.name);
    expect(await rig.client.keys(`${k.base}blob*`)).to.deep.equal([]);
    const outputs = new Map(readdirSync(out).map((n) => [n, readFileSync(join(out, n), 'utf8').replace(/pid=\d+/g, 'pid=N')]));
    await Promise.all(closables.splice(0).map((c) => c.close()));
    return { outputs, stores };
  }

  it('delivers exactly what the central path delivers; the bytes went through the producers\' stores', async () => {
    const central = await run('central');
    const direct = await run('direct');
    expect([...direct.outputs.keys()].sort()).to.deep.equal([...central.outputs.keys()].sort());
    for (const [name, body] of central.outputs) expect(direct.outputs.get(name), name).to.equal(body);
    expect(central.outputs.size).to.equal(6);
    // split, left, right, merge, audit each kept their outputs (20 KB and more) on their node.
    for (const t of ['split', 'left', 'right', 'merge', 'audit']) {
      const files = readdirSync(join(direct.stores, t));
      expect(files.length, t).to.be.at.least(3);
      expect(files.every((f) => /^[0-9a-f]{40}$/.test(f))).to.equal(true);
    }
  });

  it('the data endpoint serves only holders of the deployment token, only blob ids, only what its store holds', async () => {
    const store = new NodeStore(join(rig.work, 'store'), { maxBytes: 1e6, waitMs: 1000 });
    await store.put(ID, Buffer.from('frame'));
    const server = new DataServer({ store, token: 'secret-one', host: '127.0.0.1' });
    const port = await server.start();
    closables.push(server);
    expect((await get(port, `/blob/${ID}`, 'secret-one')).body.toString()).to.equal('frame');
    expect((await get(port, `/blob/${ID}`)).status).to.equal(401);
    expect((await get(port, `/blob/${ID}`, 'secret-two')).status).to.equal(401);
    expect((await get(port, '/blob/..%2F..%2Fetc%2Fpasswd', 'secret-one')).status).to.equal(400);
    expect((await get(port, '/blob/../../etc/passwd', 'secret-one')).status).to.equal(400);
    expect((await get(port, `/blob/${'b'.repeat(40)}`, 'secret-one')).status).to.equal(404);
    expect(() => store.has('../x')).to.throw(/not a blob id/);
    // A task's output goes in by a link (owner-only), or by a copy when the file has other names
    // (their mode stays theirs); a 600 KiB answer comes out whole, in pieces.
    const big = join(rig.work, 'out.bin');
    writeFileSync(big, Buffer.alloc(600_000, 3), { mode: 0o644 });
    const C = 'c'.repeat(40);
    await store.putFile(C, big, 600_000);
    expect(statSync(join(store.dir, C)).ino).to.equal(statSync(big).ino);
    expect(statSync(join(store.dir, C)).mode & 0o777).to.equal(0o600);
    const shared = join(rig.work, 'shared.bin');
    writeFileSync(shared, 'kept as is', { mode: 0o644 });
    linkSync(shared, join(rig.work, 'other-name.bin'));
    const D = 'd'.repeat(40);
    await store.putFile(D, shared, 10);
    expect(statSync(join(store.dir, D)).ino).to.not.equal(statSync(shared).ino);
    expect(statSync(shared).mode & 0o777).to.equal(0o644);
    const served = await get(port, `/blob/${C}`, 'secret-one');
    expect(served.status).to.equal(200);
    expect(served.body.equals(Buffer.alloc(600_000, 3))).to.equal(true);
  });

  it('a full store holds its producer back until the sweep frees what receivers took; young files are kept', async () => {
    const store = new NodeStore(join(rig.work, 'bp'), { maxBytes: 100_000, waitMs: 10_000 });
    await store.put(ID, Buffer.alloc(80_000));
    let second = false;
    const p = store.put('b'.repeat(40), Buffer.alloc(80_000)).then(() => (second = true));
    await new Promise((r) => setTimeout(r, 400));
    expect(second).to.equal(false);
    // still referenced: kept
    expect(await store.sweep(async (ids) => ids.map(() => true), 0)).to.equal(0);
    // young: kept whatever Redis says
    expect(await store.sweep(async (ids) => ids.map(() => false), 60_000)).to.equal(0);
    expect(await store.sweep(async (ids) => ids.map(() => false), 0)).to.equal(1);
    await p;
    expect(second).to.equal(true);
    expect(store.usedBytes).to.equal(80_000);
  });

  it('puts under way at once (a runner\'s slots) share the budget: one goes in, the others wait for room', async () => {
    const store = new NodeStore(join(rig.work, 'together'), { maxBytes: 100_000, waitMs: 500 });
    const ids = ['c', 'd', 'e'].map((x) => x.repeat(40));
    const res = await Promise.allSettled(ids.map((id) => store.put(id, Buffer.alloc(60_000))));
    expect(res.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected']);
    expect(String((res[1] as PromiseRejectedResult).reason)).to.match(/data store is full \(60000 of 100000 bytes/);
    expect(store.usedBytes).to.equal(60_000);
    expect(readdirSync(store.dir).filter((f) => ids.includes(f))).to.deep.equal([ids[0]]);
  });

  it('a file whose commit came back goes as soon as its record is gone; a put that has to wait asks for a sweep', async () => {
    let asked = 0;
    const store = new NodeStore(join(rig.work, 'marks'), { maxBytes: 100_000, waitMs: 10_000, onFull: () => asked++ });
    const [A, B] = ['a', 'b'].map((c) => c.repeat(40)) as [string, string];
    await store.put(A, Buffer.alloc(40_000));
    await store.put(B, Buffer.alloc(40_000));
    store.markCommitted([B, 'c'.repeat(40)]); // one swept already: nothing to mark
    expect(statSync(join(store.dir, B)).mode & 0o777).to.equal(0o400);
    // Both young, both without a record: only the marked one goes.
    expect(await store.sweep(async (ids) => ids.map(() => false), 60_000)).to.equal(1);
    expect(readdirSync(store.dir)).to.deep.equal([A]);
    // Marked but still referenced: kept.
    store.markCommitted([A]);
    expect(await store.sweep(async (ids) => ids.map(() => true), 60_000)).to.equal(0);
    const p = store.put(B, Buffer.alloc(80_000));
    await new Promise((r) => setTimeout(r, 300));
    expect(asked).to.be.at.least(1);
    expect(await store.sweep(async (ids) => ids.map(() => false), 60_000)).to.equal(1);
    await p;
    // Put again under the same id: a fresh file, unmarked until its own commit comes back.
    expect(statSync(join(store.dir, B)).mode & 0o777).to.equal(0o600);
    expect(store.usedBytes).to.equal(80_000);
    // A run whose inputs this store holds frees them when it commits: its output never waits.
    await store.put('d'.repeat(40), Buffer.alloc(90_000), { freesInputs: true });
    expect(store.usedBytes).to.equal(170_000);
  });

  /**
   * jsline's three tasks on the direct path with stores of 200 KB, and 30 items of 50 KB through
   * them (each task's stream 7.5 times its store): on three nodes, or all on one (one store).
   */
  async function stream(nodes: 'three' | 'one'): Promise<void> {
    const app = specOf(fixtureAppDir('jsline'));
    await rig.client.flushall();
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000, dataPath: 'direct', storeBytes: 200_000 });
    const stores = join(rig.work, `stream-${nodes}`);
    const nodeOf = (t: string): string => (nodes === 'one' ? 'one' : `node-${t}`);
    for (const t of app.tasks.filter((x) => x.isDag)) {
      closables.push(await TaskRunner.start({ app, task: t, node: nodeOf(t.name), redisUrl: rig.redis.url, prefix: PREFIX, workDir: join(rig.work, `w-${nodes}`), dataDir: join(stores, nodeOf(t.name)) }));
    }
    const out = join(rig.work, `out-${nodes}`);
    closables.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    const files = Array.from({ length: 30 }, (_, i) => {
      const p = join(rig.work, `${i}${nodes}.txt`);
      writeFileSync(p, `${String(i % 10).repeat(50_000)}\n`);
      return p;
    });
    // The most each store held while the stream went through.
    const most = new Map<string, number>();
    const held = (dir: string): number => readdirSync(join(stores, dir)).filter((f) => /^[0-9a-f]{40}$/.test(f)).reduce((n, f) => {
      try {
        return n + statSync(join(stores, dir, f)).size;
      } catch {
        return n; // swept meanwhile
      }
    }, 0);
    const watch = setInterval(() => {
      for (const dir of readdirSync(stores)) most.set(dir, Math.max(most.get(dir) ?? 0, held(dir)));
    }, 10);
    try {
      const items = await submitItems(rig.client, PREFIX, app, files, { runId: nodes });
      // Within half the grace (SWEEP_GRACE_MS, 60 s): files kept for the grace would hold it longer.
      const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: SWEEP_GRACE_MS / 2 });
      expect(res.filter((r) => !r.done || r.failed)).to.deep.equal([]);
    } finally {
      clearInterval(watch);
    }
    expect(readdirSync(out)).to.have.length(30);
    expect(most.size).to.equal(nodes === 'one' ? 1 : 3);
    // The budget. On one node a's puts wait for it, and what b and c make of what a let in goes in
    // beside it (their outputs replace their inputs, which leave at the next sweep): bounded by
    // three times the budget.
    for (const [dir, bytes] of most) expect(bytes, dir).to.be.at.most(nodes === 'one' ? 3 * 200_000 + 50_010 : 200_000);
    await Promise.all(closables.splice(0).map((c) => c.close()));
  }

  it('a stream many times the store flows through it: what receivers took is removed at once, not after the grace', async () => {
    await stream('three');
  });

  it('tasks of one node sharing its store do not block each other: a run that frees its inputs may always store its outputs', async () => {
    await stream('one');
  });

  /** The transfers recorded on a link once `n` are there (the plane writes them without waiting). */
  async function recorded(key: string, n: number): Promise<LinkTransfer[]> {
    for (let i = 0; i < 50 && (await rig.client.llen(key)) < n; i++) await new Promise((r) => setTimeout(r, 20));
    return (await rig.client.lrange(key, 0, -1)).map((x) => JSON.parse(x) as LinkTransfer);
  }

  it('a receiver rides out an unreachable node: the fetch succeeds once the node answers again', async () => {
    const settings: PipelineSettings = { ...(await readSettings(rig.client, PREFIX, 'x')), dataPath: 'direct', fetchPatienceMs: 20_000 };
    const keys = appKeys(PREFIX, 'x');
    const token = await ensureDataToken(rig.client, keys);
    const store = new NodeStore(join(rig.work, 'far'), { maxBytes: 1e6, waitMs: 1000 });
    await store.put(ID, Buffer.alloc(50_000, 7));
    const port = await freePort();
    // registered, but nothing listens yet (a cut link looks the same from here, only slower)
    await rig.client.hset(keys.dataNodes('far'), `127.0.0.1:${port}`, String(Date.now()));
    const logs: string[] = [];
    const reader = await DataPlane.reader({ redis: rig.client, keys, settings, node: 'near', log: (m) => logs.push(m) });
    const t0 = Date.now();
    const got = reader.fetch('far', ID);
    await new Promise((r) => setTimeout(r, 1500));
    const server = new DataServer({ store, token, host: '127.0.0.1', port });
    await server.start();
    closables.push(server);
    const bytes = await got;
    expect(bytes.equals(Buffer.alloc(50_000, 7))).to.equal(true);
    expect(Date.now() - t0).to.be.at.least(1500);
    expect(reader.stats.retries).to.be.greaterThan(0);
    expect(logs.join('\n')).to.match(/node far unreachable/);
    await reader.close();
  });

  it('fetches from one node go in the order asked, the next in the tail of the current one; the patience counts from the asking', async () => {
    const settings: PipelineSettings = { ...(await readSettings(rig.client, PREFIX, 'x')), dataPath: 'direct', fetchPatienceMs: 1200 };
    const keys = appKeys(PREFIX, 'x');
    await ensureDataToken(rig.client, keys);
    // The far node, seen from the wire: sends three quarters of each answer after 60 ms and the
    // rest after 120 ms (the tail, within OVERLAP_MS at the rate seen), counting requests in flight.
    const BODY = Buffer.alloc(LINK_TRANSFER_MIN_BYTES, 1);
    const CUT = (BODY.length * 3) / 4;
    let inFlight = 0;
    let most = 0;
    const order: string[] = [];
    const far = createHttpServer((req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      order.push(req.url!.slice(-2));
      res.writeHead(200, { 'content-length': BODY.length });
      setTimeout(() => res.write(BODY.subarray(0, CUT)), 60);
      setTimeout(() => {
        inFlight--;
        res.end(BODY.subarray(CUT));
      }, 120);
    });
    await new Promise<void>((r) => far.listen(0, '127.0.0.1', () => r()));
    await rig.client.hset(keys.dataNodes('far'), `127.0.0.1:${(far.address() as { port: number }).port}`, String(Date.now()));
    const reader = await DataPlane.reader({ redis: rig.client, keys, settings, node: 'near', log: () => undefined });
    const ids = ['01', '02', '03', '04'].map((n) => `${'b'.repeat(38)}${n}`);
    const t0 = performance.now();
    const got = await Promise.all(ids.map((id) => reader.fetch('far', id)));
    const wall = (performance.now() - t0) / 1000;
    expect(got.every((b) => b.equals(BODY))).to.equal(true);
    // The next request goes out in the current one's tail: two overlap, never more.
    expect(most).to.equal(2);
    expect(order).to.deep.equal(['01', '02', '03', '04']);
    // Each transfer is link evidence for far -> near (config/link-transfers.ts), timed without
    // its wait in the lane: each took about one answer's time, where counting the wait would make
    // the last one take about the whole wall time.
    const transfers = await recorded(keys.linkTransfers('far', 'near'), 4);
    expect(transfers.map((t) => t.bytes)).to.deep.equal([BODY.length, BODY.length, BODY.length, BODY.length]);
    expect(Math.max(...transfers.map((t) => t.seconds))).to.be.below(0.75 * wall);
    // A take asked before a fetch, where far's store folder is readable here but lacks the blob:
    // both go over the network, in the order asked (the take's extra look let the fetch overtake).
    const empty = mkdtempSync(join(rig.work, 'far-site-'));
    const site = statSync(empty);
    await rig.client.hset(keys.dataDirs('far'), 'here', JSON.stringify({ machine: machineId(), dir: empty, dev: site.dev, ino: site.ino }));
    const second = await DataPlane.reader({ redis: rig.client, keys, settings, node: 'near2', log: () => undefined });
    order.length = 0;
    const [taken, fetched] = await Promise.all([second.take('far', `${'b'.repeat(38)}05`), second.fetch('far', `${'b'.repeat(38)}06`)]);
    expect(order).to.deep.equal(['05', '06']);
    expect(taken.bytes?.equals(BODY) && fetched.equals(BODY)).to.equal(true);
    await second.close();
    await rig.client.hdel(keys.dataDirs('far'), 'here');
    await new Promise<void>((r) => far.close(() => r()));

    // An unreachable node: three fetches asked together all give up after about one patience,
    // not one patience each in turn.
    const port = await freePort();
    await rig.client.hset(keys.dataNodes('gone'), `127.0.0.1:${port}`, String(Date.now()));
    const t1 = Date.now();
    const outcomes = await Promise.allSettled(ids.slice(0, 3).map((id) => reader.fetch('gone', id)));
    expect(outcomes.every((o) => o.status === 'rejected')).to.equal(true);
    expect(Date.now() - t1).to.be.below(3 * 1200);
    await reader.close();
  });

  it('a fetched body given back is reused by the next fetch; work folders off the store\'s file system go beside it', async () => {
    const settings: PipelineSettings = { ...(await readSettings(rig.client, PREFIX, 'x')), dataPath: 'direct' };
    const keys = appKeys(PREFIX, 'x');
    await ensureDataToken(rig.client, keys);
    let n = 0;
    const far = createHttpServer((req, res) => {
      const body = Buffer.alloc(100_000, ++n);
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    await new Promise<void>((r) => far.listen(0, '127.0.0.1', () => r()));
    await rig.client.hset(keys.dataNodes('far'), `127.0.0.1:${(far.address() as { port: number }).port}`, String(Date.now()));
    const reader = await DataPlane.reader({ redis: rig.client, keys, settings, node: 'near', log: () => undefined });
    const id = (k: number): string => `${'c'.repeat(38)}0${k}`;
    const first = await reader.fetch('far', id(1));
    expect(first[0]).to.equal(1);
    releaseBody(first);
    releaseBody(Buffer.alloc(100_000)); // not a fetched body: ignored
    const second = await reader.fetch('far', id(2));
    expect(second.buffer).to.equal(first.buffer);
    expect(second.equals(Buffer.alloc(100_000, 2))).to.equal(true);
    const third = await reader.fetch('far', id(3)); // the pool is empty again: a buffer of its own
    expect(third.buffer).to.not.equal(second.buffer);
    await reader.close();
    await new Promise<void>((r) => far.close(() => r()));

    const store = join(rig.work, 'store-fs');
    mkdirSync(store);
    expect(besideStore(join(rig.work, 'w-same'), store, 't')).to.equal(join(rig.work, 'w-same'));
    if (existsSync('/dev/shm') && statSync('/dev/shm').dev !== statSync(store).dev) {
      const shm = mkdtempSync('/dev/shm/jupiter-test-');
      try {
        expect(besideStore(join(shm, 'w'), store, 't')).to.equal(join(store, '.work', 't'));
      } finally {
        rmSync(shm, { recursive: true, force: true });
      }
    }
  });

  it('the runners of one node host share one plane: one endpoint for the node, closed with the last runner', async () => {
    const settings: PipelineSettings = { ...(await readSettings(rig.client, PREFIX, 'x')), dataPath: 'direct' };
    const keys = appKeys(PREFIX, 'x');
    const dir = join(rig.work, 'hosted');
    const opts = { redis: rig.client, keys, settings, node: 'n1', dir, log: () => undefined };
    const [a, b] = await Promise.all([DataPlane.producer(opts), DataPlane.producer(opts)]);
    expect(a).to.equal(b);
    expect(Object.keys(await rig.client.hgetall(keys.dataNodes('n1')))).to.deep.equal([a.address]);
    await a.close();
    expect(Object.keys(await rig.client.hgetall(keys.dataNodes('n1')))).to.deep.equal([a.address]);
    await b.close();
    expect(await rig.client.hgetall(keys.dataNodes('n1'))).to.deep.equal({});
    expect(await rig.client.hgetall(keys.dataDirs('n1'))).to.deep.equal({});
  });

  it('a receiver on the producer\'s machine that sees its store folder takes the file, not the bytes over the network', async () => {
    const settings: PipelineSettings = { ...(await readSettings(rig.client, PREFIX, 'x')), dataPath: 'direct' };
    const keys = appKeys(PREFIX, 'x');
    const producer = await DataPlane.producer({ redis: rig.client, keys, settings, node: 'p1', dir: join(rig.work, 'near-store'), log: () => undefined });
    closables.push(producer);
    const E = 'e'.repeat(40);
    await producer.put(E, Buffer.alloc(70_000, 5));
    const reader = await DataPlane.reader({ redis: rig.client, keys, settings, node: 'r1', log: () => undefined });
    closables.push(reader);
    const near = await reader.take('p1', E);
    expect(near.file).to.equal(join(rig.work, 'near-store', E));
    expect(near.file && statSync(near.file).size).to.equal(70_000);
    expect((await reader.fetch('p1', E)).equals(Buffer.alloc(70_000, 5))).to.equal(true);
    expect(reader.stats).to.include({ local: 2, fetched: 0 });
    // Another machine's folder, or one at the same path that is not the same folder (a container
    // mounting something else there): the bytes come over the network, from the endpoint.
    const [site] = Object.entries(await rig.client.hgetall(keys.dataDirs('p1')));
    for (const wrong of [{ machine: 'boot:elsewhere' }, { ino: -1 }]) {
      await rig.client.hset(keys.dataDirs('p1'), site![0], JSON.stringify({ ...JSON.parse(site![1]), ...wrong }));
      const far = await DataPlane.reader({ redis: rig.client, keys, settings, node: 'r2', log: () => undefined });
      closables.push(far);
      const got = await far.take('p1', E);
      expect(got.bytes?.equals(Buffer.alloc(70_000, 5))).to.equal(true);
      expect(far.stats).to.include({ local: 0, fetched: 1 });
    }
  });
});

