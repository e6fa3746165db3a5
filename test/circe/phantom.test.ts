// A task with NUM_INPUTS 1 that gets two files of one job runs twice (a small delivery runs at
// once, without a look at the done marker); its commit refuses the second run and stores nothing
// of it, but that run's output jobs were already pipelined behind the commit. Those phantom
// deliveries must be finished as duplicates by their receivers and the sink: never run, written,
// retried or dead-lettered.
import { expect } from 'chai';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { specOf, until } from './support.js';
import { appKeys, configureApp, getStatus, Sink, submitItems, TaskRunner, waitForItems } from '../../circe/index.js';
import type { QueuedJob } from '../../circe/queue/transport.js';

const PREFIX = 'jt:';

/**
 * a: a small input becomes an 80 KiB output (so its deliveries need their blob, which is large
 * enough to travel beside the scripts: the refused run's staged bytes must go too); b: copies its
 * start, slowly (its run of the real delivery is still going when the phantom arrives).
 */
function phantomApp(root: string): string {
  const dir = join(root, 'phantom');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '2\na 1 true b home\nb 1 true home\n');
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({ taskname_map: { a: ['a', true], b: ['b', true] } }));
  writeFileSync(join(dir, 'scripts', 'a.mjs'), [
    "import { readFileSync, writeFileSync } from 'node:fs';",
    "import { join } from 'node:path';",
    'export function task(inputs, pathin, pathout) {',
    "  const out = join(pathout, `${inputs[0].split('.')[0]}_a.txt`);",
    "  writeFileSync(out, readFileSync(join(pathin, inputs[0]), 'utf8').padEnd(80_000, '.'));",
    '  return out;',
    '}',
  ].join('\n'));
  writeFileSync(join(dir, 'scripts', 'b.mjs'), [
    "import { readFileSync, writeFileSync } from 'node:fs';",
    "import { join } from 'node:path';",
    'export async function task(inputs, pathin, pathout) {',
    '  await new Promise((r) => setTimeout(r, 300));',
    "  const out = join(pathout, inputs[0].replace('_a.txt', '_b.txt'));",
    "  writeFileSync(out, readFileSync(join(pathin, inputs[0]), 'utf8').slice(0, 16) + 'b');",
    '  return out;',
    '}',
  ].join('\n'));
  return dir;
}

describe('circe phantom deliveries (duplicate run of a NUM_INPUTS 1 task, real Redis)', function () {
  this.timeout(60_000);
  const runners: Array<{ close(): Promise<void> }> = [];
  const rig = circeSuite({ workPrefix: 'jupiter-phantom-', flushEach: true, closeEach: () => runners.splice(0) });

  it('finishes the outputs of a refused run as duplicates: nothing retried, dead-lettered or written', async () => {
    const app = specOf(phantomApp(rig.work));
    const k = appKeys(PREFIX, app.name);
    // Concurrency 2: b takes both of a's jobs (the real one and the phantom) at once.
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000, concurrency: 2 });
    const out = join(rig.work, 'output');
    const start = (name: string): Promise<TaskRunner> => TaskRunner.start({
      app, task: app.tasks.find((t) => t.name === name)!, node: `node-${name}`, redisUrl: rig.redis.url, prefix: PREFIX, workDir: join(rig.work, 'w', name),
    });
    runners.push(await start('a'), await Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out }));
    const files = ['4_x.txt', '4_y.txt'].map((n) => {
      writeFileSync(join(rig.work, n), `${n}\n`);
      return join(rig.work, n);
    });
    const [item] = await submitItems(rig.client, PREFIX, app, files);
    expect(item!.files).to.have.length(2);
    const id = item!.item;
    // b is held until both runs of a have committed (one counted, one refused as a duplicate):
    // then b's done marker for the item does not exist yet when the phantom reaches it.
    await until(async () => {
      const st = await rig.client.hmget(k.stats, 'processed:a', 'dup:a');
      return st[0] === '1' && st[1] === '1';
    }, 10_000, 'both runs of a committed');
    runners.push(await start('b'));
    const [res] = await waitForItems(rig.client, PREFIX, app.name, [id], { timeoutMs: 20_000 });
    // The run that counted is the one in a's done marker (its outbox).
    const outbox = JSON.parse((await rig.client.get(k.done('a', id)))!) as QueuedJob[];
    const base = outbox[0]!.d.name.replace('_a.txt', '');
    expect(outbox.every((j) => j.d.name === `${base}_a.txt`)).to.equal(true);
    expect(res!.failed).to.equal(false);
    expect(res!.outputs).to.deep.equal([`${base}_a.txt`, `${base}_b.txt`]);
    expect(readdirSync(out).sort()).to.deep.equal([`${base}_a.txt`, `${base}_b.txt`]);
    expect(readFileSync(join(out, `${base}_b.txt`), 'utf8')).to.equal(`${base}.txt\n${'.'.repeat(16 - base.length - 5)}b`);
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.deadLetters).to.deep.equal([]);
    const b = st.tasks.find((t) => t.task === 'b')!;
    expect(b).to.deep.include({ processed: 1, failed: 0, retried: 0, duplicates: 1 });
    expect(st.sink).to.deep.include({ delivered: 2, duplicatesSuppressed: 1, failed: 0 });
    expect(st.items).to.deep.include({ submitted: 1, done: 1 });
    // Nothing is left in flight or stored.
    await until(async () => (await rig.client.keys(`${k.base}blob*`)).length === 0, 5_000, 'blobs freed');
    expect(await rig.client.scard(k.pending(id))).to.equal(0);
  });
});
