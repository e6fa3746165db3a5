// What a deployment's tasks took is kept when it is removed, and the next deploy of the app maps
// with it (orchestrator/profiles/calibration.ts): through the real CLI on the embedded stack. The
// app's first task takes 4 ms on the sample input (what the execution profiler times) and 40 ms on
// the items it is then given.
import { expect } from 'chai';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MappingRecord } from '../../config/events.js';
import type { AppCalibration } from '../../profilers/models/calibration.js';
import { cliSuite } from '../support/cli-suite.js';
import { writeItems } from '../support/faults.js';

const APP = 'calib';
const PREFIX = 'jupiter:';

function writeApp(parent: string): string {
  const dir = join(parent, APP);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '2\nslow 1 false quick\nquick 1 false home\n');
  const task = (name: string, body: string): string => [
    "import { readFile, writeFile } from 'node:fs/promises';",
    "import { join } from 'node:path';",
    'export async function task(inputs, pathin, pathout) {',
    '  const [name] = inputs;',
    "  const text = await readFile(join(pathin, name), 'utf8');",
    body,
    `  const out = join(pathout, name.split(/[_.]/)[0] + '_${name}.txt');`,
    `  await writeFile(out, text + '${name}\\n');`,
    '  return [out];',
    '}',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'scripts', 'slow.mjs'), task('slow', "  await new Promise((r) => setTimeout(r, text.startsWith('sample') ? 4 : 40));"));
  writeFileSync(join(dir, 'scripts', 'quick.mjs'), task('quick', ''));
  writeFileSync(join(dir, 'scripts', 'config.json'), `${JSON.stringify({ taskname_map: { slow: ['slow', true], quick: ['quick', true] }, exec_profiler: { slow: true, quick: true } }, null, 2)}\n`);
  writeFileSync(join(dir, 'sample_input', '0s.txt'), 'sample\n');
  return dir;
}

describe('profilers: task times observed in a removed deployment scale the next mapping (calibration)', function () {
  this.timeout(180_000);
  const { box, redis: stackRedis } = cliSuite('jupiter-calibration-', APP);

  it('teardown keeps each task\'s runtime / profile ratio; the next deploy says so and predicts with it', async () => {
    const appDir = writeApp(box.cwd);
    await box.ok(['deploy', appDir, '--runtime', 'process', '--wait'], { timeoutMs: 120_000 });
    const mapping = async (): Promise<MappingRecord> => JSON.parse((await stackRedis().get(`${PREFIX}app:${APP}:mapping`))!) as MappingRecord;
    const span = (m: MappingRecord, task: string): number => {
      const s = m.schedule.find((e) => e.task === task)!;
      return s.finish - s.start;
    };
    const first = await mapping();
    const files = writeItems(join(box.cwd, 'in'), 12, 'c');
    await box.ok(['submit', APP, ...files, '--wait', '--timeout', '60']);

    const down = await box.ok(['teardown', APP]);
    expect(down.stdout).to.match(/kept what (slow, quick|quick, slow) took at runtime against their profiles, for the next deploy of calib/);
    const kept = JSON.parse((await stackRedis().get(`${PREFIX}observed:${APP}`))!) as AppCalibration;
    expect(Object.keys(kept).sort()).to.deep.equal(['quick', 'slow']);
    expect(kept.slow!.n).to.equal(13); // the sample input and the 12 items
    expect(kept.slow!.ratio, 'slow: 40 ms runs against a ~4 ms profile (bounded at 5)').to.be.within(2.5, 5);
    expect(await stackRedis().pttl(`${PREFIX}observed:${APP}`)).to.be.greaterThan(23 * 3600_000);

    const again = await box.ok(['deploy', appDir, '--runtime', 'process', '--wait'], { timeoutMs: 120_000 });
    expect(again.stdout + again.stderr).to.match(/task times scaled by what they took in earlier deployments \(\d+ runs\): .*slow x\d\.\d\d/);
    const second = await mapping();
    console.log(`      slow: ratio ${kept.slow!.ratio.toFixed(2)} of ${kept.slow!.n} runs; predicted ${(span(first, 'slow') * 1000).toFixed(1)} -> ${(span(second, 'slow') * 1000).toFixed(1)} ms, makespan ${(first.predictedMakespan * 1000).toFixed(1)} -> ${(second.predictedMakespan * 1000).toFixed(1)} ms`);
    // The span is the task's time plus the node's invocation cost, which the ratio does not scale.
    expect(span(second, 'slow')).to.be.greaterThan(span(first, 'slow') * 2);
    expect(second.predictedMakespan).to.be.greaterThan(first.predictedMakespan);
  });
});
