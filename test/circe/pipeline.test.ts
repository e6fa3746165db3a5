import { expect } from 'chai';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { circeSuite } from '../support/circe-suite.js';
import { fixtureAppDir, specOf, until } from './support.js';
import {
  appKeys, configureApp, exportRuntimeCsv, expectedOutputs, getStatus, Sink, submitItems,
  teardownAppKeys, TaskRunner, waitForItems, type PipelineSettings,
} from '../../circe/index.js';
import type { AppSpec } from '../../config/types.js';

const PREFIX = 'jt:';

describe('circe pipeline (in-process runners, real Redis)', function () {
  this.timeout(60_000);
  let runners: Array<{ close(): Promise<void> }> = [];
  const rig = circeSuite({ workPrefix: 'jupiter-pipe-', flushEach: true, closeEach: () => runners.splice(0) });

  async function deploy(app: AppSpec, s: Partial<PipelineSettings> = {}): Promise<{ out: string; runners: Map<string, TaskRunner> }> {
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000, ...s });
    const out = join(rig.work, 'output');
    const byTask = new Map<string, TaskRunner>();
    for (const t of app.tasks.filter((x) => x.isDag)) {
      const r = await TaskRunner.start({ app, task: t, node: `node-${t.name}`, redisUrl: rig.redis.url, prefix: PREFIX, workDir: join(rig.work, 'w') });
      byTask.set(t.name, r);
      runners.push(r);
    }
    runners.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    return { out, runners: byTask };
  }

  function inputs(contents: Record<string, string>): string[] {
    return Object.entries(contents).map(([name, body]) => {
      const p = join(rig.work, name);
      writeFileSync(p, body);
      return p;
    });
  }

  it('joins, routes both FLAG modes, keeps one Python worker per runner, deletes blobs, records runtimes', async () => {
    const app = specOf(fixtureAppDir('pyjoin'));
    expect(expectedOutputs(app)).to.equal(2);
    const { out, runners: rs } = await deploy(app);
    const items = await submitItems(rig.client, PREFIX, app, inputs({ '1a.txt': 'one\n', '2b.txt': 'two\n', '3c.txt': 'three\n' }), { runId: 'r1' });
    expect(items.map((i) => i.item)).to.deep.equal(['1a', '2b', '3c']);
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 30_000 });
    for (const r of res) {
      expect(r.failed).to.equal(false);
      expect(r.outputs).to.deep.equal([`${r.item}_audit.txt`, `${r.item}_merged.txt`]);
      expect(r.makespanMs).to.be.a('number').and.at.least(0);
    }
    const merged = readFileSync(join(out, '2b_merged.txt'), 'utf8');
    const pid = (t: string): number => rs.get(t)!.invokerPid!;
    // split (FLAG false) sent output 0 to left, 1 to right; left (FLAG true) sent to merge and audit.
    expect(merged).to.equal(
      `two\nsplit pid=${pid('split')} in=2b.txt\nleft pid=${pid('left')} in=2b_split_left\n` +
      `two\nsplit pid=${pid('split')} in=2b.txt\nright pid=${pid('right')} in=2b_split_right\n` +
      `merge pid=${pid('merge')} in=2b_left,2b_right\n`);
    expect(readFileSync(join(out, '3c_audit.txt'), 'utf8')).to.equal(
      `three\nsplit pid=${pid('split')} in=3c.txt\nleft pid=${pid('left')} in=3c_split_left\naudit pid=${pid('audit')} in=3c_left\n`);
    // every input of every task was released once taken: no blob is left in Redis
    const k = appKeys(PREFIX, app.name);
    expect(await rig.client.keys(`${k.base}blob*`)).to.deep.equal([]);
    expect(await rig.client.keys(`${k.base}join:*`)).to.deep.equal([]);
    const csv = (await exportRuntimeCsv(rig.client, app.name, PREFIX)).trim().split('\n');
    expect(csv[0]).to.equal('Task_name,local_input_file,Enter_time,Execute_time,Finish_time,Elapse_time,Duration_time,Waiting_time,Node');
    expect(csv).to.have.length(1 + 3 * 5);
    expect(csv.find((l) => /^merge,2b_(left;2b_right|right;2b_left),/.test(l))).to.match(/,node-merge$/);
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.items).to.deep.include({ submitted: 3, done: 3 });
    expect(st.sink.delivered).to.equal(6);
    expect(st.tasks.find((t) => t.task === 'merge')!.processed).to.equal(3);
    expect(st.makespan.count).to.equal(3);
    const events = await rig.client.xlen(k.events);
    expect(events).to.be.greaterThan(3 * 5 * 3);
  });

  it('retries a failing task with backoff, then dead-letters it; the other items flow', async () => {
    const app = specOf(fixtureAppDir('pyjoin'));
    await deploy(app, { attempts: 3 });
    const items = await submitItems(rig.client, PREFIX, app, inputs({ '1ok.txt': 'fine', '2bad.txt': 'FAIL', '3ok.txt': 'fine' }));
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item));
    expect(res.map((r) => r.failed)).to.deep.equal([false, true, false]);
    expect(res[1]!.error).to.match(/split: task split raised ValueError: asked to fail/);
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.deadLetters).to.have.length(1);
    expect(st.deadLetters[0]).to.deep.include({ task: 'split', item: '2bad', file: '2bad.txt', attempts: 3 });
    expect(st.tasks.find((t) => t.task === 'split')).to.deep.include({ failed: 1, retried: 2, processed: 2 });
    expect(await rig.client.keys(`${appKeys(PREFIX, app.name).base}blob*`)).to.deep.equal([]);
  });

  it('dead-letters at once what a retry cannot fix: escaping paths, FLAG false count mismatch, size limit', async () => {
    const app = specOf(fixtureAppDir('pyjoin'));
    await deploy(app, { maxBlobBytes: 1000 });
    const items = await submitItems(rig.client, PREFIX, app, inputs({ '1.txt': 'ESCAPE', '2.txt': 'SYMLINK', '3.txt': 'COUNT', '4.txt': 'BIG', '5.txt': 'fine' }));
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item));
    expect(res.map((r) => r.failed)).to.deep.equal([true, true, true, true, false]);
    expect(res[0]!.error).to.match(/outside its pathout/);
    expect(res[1]!.error).to.match(/link that leads outside/);
    expect(res[2]!.error).to.match(/returned 1 output\(s\) for 2 child\(ren\).*FLAG false/);
    expect(res[3]!.error).to.match(/4\.9 KiB, over the pipeline's size limit of 1000 B/);
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.deadLetters.every((d) => d.attempts === 1)).to.equal(true);
    // the source refuses too-large inputs with a clear input error
    const big = inputs({ 'huge.bin': 'x'.repeat(2000) });
    const err = await submitItems(rig.client, PREFIX, app, big).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/huge\.bin is 2\.0 KiB, over the pipeline's size limit of 1000 B/);
  });

  it('delivers exactly once at the sink: a duplicated job is suppressed and counted', async () => {
    const app = specOf(fixtureAppDir('jsline'));
    const { out } = await deploy(app);
    const sinkQueue = new Queue('home', { connection: rig.client, prefix: appKeys(PREFIX, app.name).queuePrefix });
    // Hold the sink's copy: send item 1, then replay the same output as a second job.
    const [item] = await submitItems(rig.client, PREFIX, app, inputs({ '1x.txt': 'x\n' }));
    const [r] = await waitForItems(rig.client, PREFIX, app.name, [item!.item]);
    expect(r!.outputs).to.deep.equal(['1x_c.txt']);
    const k = appKeys(PREFIX, app.name);
    await rig.client.set(k.blob('replayed'), 'other bytes');
    await rig.client.sadd(k.blobHolders('replayed'), 'jreplay');
    await sinkQueue.add('1x_c.txt', { d: [{ id: 'jreplay', item: '1x', name: '1x_c.txt', blob: 'replayed', from: 'c', size: 11 }] }, { jobId: 'jreplay' });
    await until(async () => (await getStatus(rig.client, PREFIX, app)).sink.duplicatesSuppressed === 1, 10_000, 'duplicate suppressed');
    expect(readFileSync(join(out, '1x_c.txt'), 'utf8')).to.equal('x\na\nb\nc\n');
    expect(readdirSync(out)).to.deep.equal(['1x_c.txt']);
    expect(await rig.client.exists(k.blob('replayed'))).to.equal(0);
    // One item-done event for the item, in the finished stream (what waiting clients read) as in
    // the events stream: the suppressed copy added none.
    const doneJson = async (key: string): Promise<string[]> => (await rig.client.xrange(key, '-', '+')).map(([, f]) => f[1]!).filter((j) => j.includes('"item-done"') && j.includes('"item":"1x"'));
    const finished = await doneJson(k.finished);
    expect(finished).to.have.length(1);
    expect(await doneJson(k.events)).to.deep.equal(finished);
    expect((await rig.client.xrange(k.finished, '-', '+')).every(([, f]) => f[1]!.includes('"item-done"'))).to.equal(true);
    await sinkQueue.close();
  });

  it('keeps the records and done markers of the newest keepItems finished items only (bounded memory)', async () => {
    const app = specOf(fixtureAppDir('jsline'));
    await deploy(app, { keepItems: 10 });
    const k = appKeys(PREFIX, app.name);
    const body = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${i + 1}k.txt`, `k ${i}\n`]));
    const first = await submitItems(rig.client, PREFIX, app, inputs(body(30)));
    await waitForItems(rig.client, PREFIX, app.name, first.map((i) => i.item), { timeoutMs: 30_000 });
    // Trimming runs as the source submits: the next item finds 30 finished ones, keeps 10.
    const [late] = await submitItems(rig.client, PREFIX, app, inputs({ '99k.txt': 'late\n' }));
    await waitForItems(rig.client, PREFIX, app.name, [late!.item], { timeoutMs: 30_000 });
    const kept = await rig.client.zrange(k.items, 0, '-1');
    expect(kept).to.have.length.within(10, 11);
    expect(kept).to.include(late!.item);
    const gone = first[0]!.item;
    expect(kept).to.not.include(gone);
    for (const key of [k.item(gone), k.out(gone), k.rt(gone), ...app.dagTasks.map((t) => k.done(t, gone))]) {
      expect(await rig.client.exists(key), key).to.equal(0);
    }
    const newest = first[29]!.item;
    expect(await rig.client.exists(k.done(app.dagTasks[0]!, newest))).to.equal(1);
    const doneMarkers = await rig.client.keys(`${k.base}done:*`);
    expect(doneMarkers.length).to.be.at.most(11 * app.dagTasks.length);
  });

  it('a restarted runner loses nothing: join state and queued jobs survive in Redis', async () => {
    const app = specOf(fixtureAppDir('pyjoin'));
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000 });
    const out = join(rig.work, 'output');
    const start = (name: string) => TaskRunner.start({ app, task: app.tasks.find((t) => t.name === name)!, node: 'n', redisUrl: rig.redis.url, prefix: PREFIX });
    // merge is down while the stream starts: its inputs wait in its queue / join hash
    for (const n of ['split', 'left', 'right', 'audit']) runners.push(await start(n));
    runners.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    const items = await submitItems(rig.client, PREFIX, app, inputs({ '1.txt': 'a', '2.txt': 'b' }));
    const merge1 = await start('merge');
    await until(async () => (await rig.client.keys(`${appKeys(PREFIX, app.name).base}join:*`)).length > 0 || (await getStatus(rig.client, PREFIX, app)).tasks.find((t) => t.task === 'merge')!.processed > 0, 10_000, 'merge busy');
    await merge1.close();
    runners.push(await start('merge'));
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item));
    expect(res.every((r) => !r.failed && r.outputs.length === 2)).to.equal(true);
  });

  it('teardown removes every key of the app and nothing else', async () => {
    const app = specOf(fixtureAppDir('jsline'));
    await deploy(app);
    const items = await submitItems(rig.client, PREFIX, app, inputs({ '1x.txt': 'x' }));
    await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item));
    await Promise.all(runners.map((r) => r.close()));
    runners = [];
    await rig.client.set(`${PREFIX}app:other:keep`, '1');
    const n = await teardownAppKeys(rig.client, PREFIX, app.name);
    expect(n).to.be.greaterThan(3);
    expect(await rig.client.keys(`${PREFIX}app:jsline:*`)).to.deep.equal([]);
    expect(await rig.client.get(`${PREFIX}app:other:keep`)).to.equal('1');
  });
});
