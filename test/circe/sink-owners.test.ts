// Two items that deliver an output of one name (one job id submitted twice) get `<name>` and
// `<name>.<item>` (outputPath); the first to arrive owns the plain name, and a restarted sink
// must still know it: item B must neither be refused as "already written" nor overwrite A, and
// B's recorded outputs name its own files.
import { expect } from 'chai';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { circeSuite } from '../support/circe-suite.js';
import { fixtureAppDir, specOf } from './support.js';
import { configureApp, getStatus, Sink, submitItems, TaskRunner, waitForItems } from '../../circe/index.js';

const PREFIX = 'jt:';

describe('circe sink output names (owner kept in Redis, real Redis)', function () {
  this.timeout(60_000);
  const runners: Array<{ close(): Promise<void> }> = [];
  const rig = circeSuite({ workPrefix: 'jupiter-owners-', flushEach: true, closeEach: () => runners.splice(0) });

  it('a restarted sink gives a second item of one output name its own file, small and large', async () => {
    const app = specOf(fixtureAppDir('jsline'));
    await configureApp(rig.client, PREFIX, app.name, { backoffMs: 20, lockMs: 5000 });
    const out = join(rig.work, 'output');
    for (const t of app.tasks) {
      runners.push(await TaskRunner.start({ app, task: t, node: `node-${t.name}`, redisUrl: rig.redis.url, prefix: PREFIX, workDir: join(rig.work, 'w', t.name) }));
    }
    const startSink = (): Promise<Sink> => Sink.start({ app: app.name, redisUrl: rig.redis.url, prefix: PREFIX, outputDir: out });
    // 1s: inline all the way (small); 1l: over 64 KiB, through blobs read and written beside the
    // scripts (large).
    const outputs = new Map<string, string[]>();
    const submit = async (small: string, large: string): Promise<string[]> => {
      writeFileSync(join(rig.work, '1s.txt'), small);
      writeFileSync(join(rig.work, '1l.txt'), large);
      const items = await submitItems(rig.client, PREFIX, app, [join(rig.work, '1s.txt'), join(rig.work, '1l.txt')]);
      const res = await waitForItems(rig.client, PREFIX, app.name, items.map((i) => i.item), { timeoutMs: 20_000 });
      expect(res.map((r) => r.failed)).to.deep.equal([false, false]);
      for (const r of res) outputs.set(r.item, r.outputs);
      return items.map((i) => i.item);
    };
    const first = await startSink();
    expect(await submit('A small\n', `A ${'a'.repeat(70_000)}\n`)).to.deep.equal(['1s', '1l']);
    await first.close();
    runners.push(await startSink());
    const [s2, l2] = await submit('B small\n', `B ${'b'.repeat(70_000)}\n`);
    expect(s2).to.not.equal('1s');
    expect(readdirSync(out).sort()).to.deep.equal(['1l_c.txt', `1l_c.txt.${l2}`, '1s_c.txt', `1s_c.txt.${s2}`].sort());
    expect(readFileSync(join(out, '1s_c.txt'), 'utf8')).to.equal('A small\na\nb\nc\n');
    expect(readFileSync(join(out, `1s_c.txt.${s2}`), 'utf8')).to.equal('B small\na\nb\nc\n');
    expect(readFileSync(join(out, '1l_c.txt'), 'utf8')).to.equal(`A ${'a'.repeat(70_000)}\na\nb\nc\n`);
    expect(readFileSync(join(out, `1l_c.txt.${l2}`), 'utf8')).to.equal(`B ${'b'.repeat(70_000)}\na\nb\nc\n`);
    // Each item's outputs name its own files (what `submit --wait` and `status` show).
    expect(Object.fromEntries(outputs)).to.deep.equal({ '1s': ['1s_c.txt'], '1l': ['1l_c.txt'], [s2!]: [`1s_c.txt.${s2}`], [l2!]: [`1l_c.txt.${l2}`] });
    const st = await getStatus(rig.client, PREFIX, app);
    expect(st.sink).to.deep.include({ delivered: 4, duplicatesSuppressed: 0, failed: 0 });
  });
});
