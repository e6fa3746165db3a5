// The task runner's fast path: it holds a window of prefetched jobs (each a bundle of files) and
// shares arrive and commit round trips between them, yet runs the task on one item at a time, in
// arrival order, in empty work folders; a stop returns the jobs it holds to the queue without
// using an attempt.
import { expect } from 'chai';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { circeSuite } from '../support/circe-suite.js';
import { specOf, until } from './support.js';
import { appKeys, configureApp, getStatus, Sink, submitItems, TaskRunner, waitForItems } from '../../circe/index.js';
import { PREFETCH, prefetchWindow } from '../../circe/runner/limits.js';
import { FifoGate, Grouper } from '../../circe/runner/group.js';
import type { AppSpec } from '../../config/types.js';

const PREFIX = 'jg:';

/** A 2-task chain whose tasks log start/end, check that their folders start empty and leave litter. */
function chainApp(root: string): AppSpec {
  const dir = join(root, 'groupchain');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '2\np 1 true q\nq 1 true home\n');
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({ taskname_map: { p: ['step', true], q: ['step', true] } }));
  writeFileSync(join(dir, 'scripts', 'step.mjs'), `
import { appendFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
const log = new URL('./run.log', import.meta.url);
export async function task(inputs, pathin, pathout) {
  const tag = pathout.includes('-s0') ? 's0' : 'other';
  appendFileSync(log, 'start ' + inputs[0] + ' ' + tag + '\\n');
  const seen = readdirSync(pathin).sort().join(',');
  if (seen !== [...inputs].sort().join(',')) throw new Error('pathin holds ' + seen);
  if (readdirSync(pathout).length) throw new Error('pathout is not empty');
  const body = readFileSync(join(pathin, inputs[0]), 'utf8');
  if (body.includes('SLOW')) await new Promise((r) => setTimeout(r, 300));
  writeFileSync(join(pathin, 'litter.tmp'), 'x');
  mkdirSync(join(pathout, 'sub'));
  writeFileSync(join(pathout, 'sub', 'deep.tmp'), 'x');
  const out = join(pathout, inputs[0].replace(/\\.txt$/, '') + '_' + (inputs[0].includes('_') ? 'q' : 'p') + '.txt');
  writeFileSync(out, body);
  appendFileSync(log, 'end ' + inputs[0] + '\\n');
  return [out];
}
`);
  return specOf(dir);
}

describe('circe runner: prefetch window and grouped round trips', function () {
  this.timeout(60_000);
  const closers: Array<{ close(): Promise<void> }> = [];
  const rig = circeSuite({ workPrefix: 'jupiter-groups-', flushEach: true, closeEach: () => closers.splice(0) });

  function inputs(n: number, body: (i: number) => string): string[] {
    mkdirSync(join(rig.work, 'in'), { recursive: true });
    return Array.from({ length: n }, (_, i) => {
      const p = join(rig.work, 'in', `${String(i).padStart(3, '0')}.txt`);
      writeFileSync(p, body(i));
      return p;
    });
  }

  const runner = (app: AppSpec, name: string): Promise<TaskRunner> =>
    TaskRunner.start({ app, task: app.tasks.find((t) => t.name === name)!, node: 'n', redisUrl: rig.redis.url, prefix: PREFIX, workDir: join(rig.work, 'w', name) });

  it('runs one item at a time in (about) arrival order, each in empty folders, and delivers every output once', async () => {
    const app = chainApp(rig.work);
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20 });
    const out = join(rig.work, 'out');
    closers.push(await runner(app, 'p'), await runner(app, 'q'));
    closers.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    const files = inputs(150, (i) => `item ${i}\n`);
    const items = await submitItems(rig.client, PREFIX, app, files);
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 50_000 });
    expect(res.every((r) => r.done && !r.failed && r.outputs.length === 1)).to.equal(true);
    expect(readdirSync(out)).to.have.length(150);
    expect(readFileSync(join(out, '042_p_q.txt'), 'utf8')).to.equal('item 42\n');

    const lines = readFileSync(join(app.dir, 'scripts', 'run.log'), 'utf8').trim().split('\n');
    const byTask = (suffix: string): string[] => lines.filter((l) => (suffix === 'p' ? /^\w+ \d+\.txt/ : /^\w+ \d+_p\.txt/).test(l));
    for (const t of ['p', 'q']) {
      const l = byTask(t);
      // strictly start, end, start, end, ...: never two items in the task at once
      expect(l.filter((x, i) => x.startsWith(i % 2 === 0 ? 'start ' : 'end '))).to.have.length(300);
      const order = l.filter((x) => x.startsWith('start ')).map((x) => x.split(' ')[1]!.slice(0, 3));
      expect(order).to.have.length(150);
      // Arrival order, except that neighbours can swap where a backlog starts (BullMQ then
      // fetches jobs over two paths at once): no item runs more than 2 places off its rank.
      if (t === 'p') expect(order.filter((x, i) => Math.abs(Number(x) - i) > 2)).to.deep.equal([]);
      expect(l.filter((x) => x.startsWith('start ')).every((x) => x.endsWith(' s0'))).to.equal(true);
    }
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.deadLetters).to.deep.equal([]);
    expect(st.tasks.map((t) => t.processed)).to.deep.equal([150, 150]);
    expect(await rig.client.keys(`${appKeys(PREFIX, app.name).base}blob*`)).to.deep.equal([]);
  });

  it('large files: the source sends a few MiB per round trip, runners store large outputs apart; every byte arrives', async () => {
    const app = chainApp(rig.work);
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20 });
    const out = join(rig.work, 'out-big');
    closers.push(await runner(app, 'p'), await runner(app, 'q'));
    closers.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    // 1.5 MiB each, text (the tasks copy it as UTF-8), different per item.
    const body = (i: number): string => `item ${i}\n`.padEnd(1.5 * 1024 * 1024, String.fromCharCode(97 + i));
    const files = inputs(6, body);
    const steps: number[] = [];
    const items = await submitItems(rig.client, PREFIX, app, files, { onProgress: (done) => steps.push(done) });
    // Two of 1.5 MiB fit the 4 MiB a round trip carries, a third would not.
    expect(steps).to.deep.equal([2, 4, 6]);
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 50_000 });
    expect(res.every((r) => r.done && !r.failed)).to.equal(true);
    for (let i = 0; i < 6; i++) expect(readFileSync(join(out, `${String(i).padStart(3, '0')}_p_q.txt`), 'utf8') === body(i), `item ${i}`).to.equal(true);
  });

  it('a stop returns the jobs it holds to the queue untouched; a new runner finishes them', async () => {
    const app = chainApp(rig.work);
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20 });
    const out = join(rig.work, 'out');
    closers.push(await runner(app, 'q'));
    closers.push(await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    const p1 = await runner(app, 'p');
    const items = await submitItems(rig.client, PREFIX, app, inputs(12, () => 'SLOW\n'));
    const log = join(app.dir, 'scripts', 'run.log');
    // The first item shows the task's pace; from the second one on, the runner prefetches.
    await until(async () => existsSync(log) && readFileSync(log, 'utf8').includes('start 001.txt'), 10_000, 'the second item to start');
    const queue = new Queue('p', { connection: rig.client, prefix: appKeys(PREFIX, app.name).queuePrefix });
    // The source sent the 12 files as one job: the runner holds all of them.
    const before = Number(await rig.client.hget(appKeys(PREFIX, app.name).stats, 'processed:p'));
    const held = (await getStatus(rig.client, PREFIX, app)).tasks[0]!.active;
    expect(held).to.be.within(12 - before - 1, 12 - before); // an item may finish in between
    await p1.close();
    const counts = await queue.getJobCounts('wait', 'active', 'delayed', 'failed');
    const k = appKeys(PREFIX, app.name);
    const processed = Number(await rig.client.hget(k.stats, 'processed:p'));
    // the running item finished; the job with every other file is back in the queue, unfailed
    expect(processed).to.be.at.least(2);
    expect(counts).to.deep.include({ wait: 1, active: 0, delayed: 0, failed: 0 });
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.tasks[0]).to.include({ waiting: 12 - processed, active: 0, delayed: 0 });
    const waiting = await queue.getJobs(['wait']);
    expect(waiting.every((j) => j.attemptsMade === 0)).to.equal(true);
    expect(await rig.client.hget(k.stats, 'retried:p')).to.equal(null);
    await queue.close();

    closers.push(await runner(app, 'p'));
    const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 40_000 });
    expect(res.every((r) => r.done && !r.failed && r.outputs.length === 1)).to.equal(true);
    const starts = readFileSync(log, 'utf8').split('\n').filter((l) => /^start \d+\.txt/.test(l));
    expect(starts).to.have.length(12);
  });

  it('removes work folders of runners that died, and its own when it stops', async () => {
    const app = chainApp(rig.work);
    await configureApp(rig.client, PREFIX, app.name, {});
    const parent = join(rig.work, 'w', 'p');
    // A pid above Linux's pid_max belongs to no process.
    const stale = join(parent, '4194999-0-s0');
    mkdirSync(join(stale, 'input'), { recursive: true });
    writeFileSync(join(stale, 'input', 'old.txt'), 'x');
    mkdirSync(join(parent, 'not-a-slot'));
    const r = await runner(app, 'p');
    expect(existsSync(stale)).to.equal(false);
    const names = readdirSync(parent).filter((n) => n !== 'not-a-slot');
    expect(names).to.have.length(1);
    expect(names[0]).to.match(new RegExp(`^${process.pid}-\\d+-s0$`));
    await r.close();
    expect(readdirSync(parent)).to.deep.equal(['not-a-slot']);
  });

  it('Grouper: the first call goes alone, calls made meanwhile share the next group, in order', async () => {
    const groups: number[][] = [];
    let release: (() => void) | undefined;
    const g = new Grouper<number, string>(async (xs) => {
      groups.push(xs);
      if (groups.length === 1) await new Promise<void>((r) => (release = r));
      return xs.map((x) => `r${x}`);
    }, 3);
    const first = g.push(0);
    await until(async () => groups.length === 1, 1000, 'the first group');
    const rest = [1, 2, 3, 4].map((x) => g.push(x));
    release!();
    expect(await Promise.all([first, ...rest])).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r4']);
    expect(groups).to.deep.equal([[0], [1, 2, 3], [4]]);

    const failing = new Grouper<number, number>(async () => {
      throw new Error('down');
    }, 10);
    const errs = await Promise.all([failing.push(1), failing.push(2)].map((p) => p.then(() => 'ok', (e: Error) => e.message)));
    expect(errs).to.deep.equal(['down', 'down']);
  });

  it('prefetches less as the task gets slower, and nothing after an item that took an eighth of the lock', () => {
    expect(prefetchWindow(1, 1, 30_000)).to.equal(PREFETCH);
    expect(prefetchWindow(300, 300, 30_000)).to.equal(12);
    expect(prefetchWindow(3000, 3000, 30_000)).to.equal(1);
    expect(prefetchWindow(4000, 10, 30_000)).to.equal(0);
  });

  it('Grouper stops a group at its weight limit; FifoGate serves waiters in order', async () => {
    const groups: number[][] = [];
    const g = new Grouper<number, number>(async (xs) => {
      groups.push(xs);
      return xs;
    }, 10, (x) => x, 10);
    await Promise.all([8, 1, 1, 5, 20, 1, 3].map((x) => g.push(x)));
    // the first goes alone at once; the others wait for it and group up to the weight
    expect(groups).to.deep.equal([[8], [1, 1, 5], [20], [1, 3]]);

    const gate = new FifoGate(2);
    const order: string[] = [];
    await gate.take(1);
    const a = gate.take(2).then(() => order.push('a'));
    const b = gate.take(1).then(() => order.push('b'));
    gate.give(1);
    await a;
    gate.give(2);
    await b;
    expect(order).to.deep.equal(['a', 'b']);
  });
});
