// Writes expected.json: for every trigger in sample_input/, the objects the scene planted in that
// frame (ground truth, from the scene model alone) and the exact result the pipeline must deliver
// home (capture -> detect -> track run here, in this process). Deterministic: run it again after
// changing a task or a trigger. Run: node apps/camera/gen-expected.mjs
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jobPrefix, parseTrigger, scene } from './scripts/camlib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const tasks = ['capture', 'detect', 'track'];
const mods = await Promise.all(tasks.map((t) => import(join(here, 'scripts', `${t}.mjs`))));
const work = mkdtempSync(join(tmpdir(), 'camera-expected-'));
const expected = {};
try {
  for (const name of readdirSync(join(here, 'sample_input')).sort()) {
    const trigger = join(here, 'sample_input', name);
    let file = trigger;
    for (const [i, t] of tasks.entries()) {
      const pathin = join(work, name, t, 'in');
      mkdirSync(pathin, { recursive: true });
      copyFileSync(file, join(pathin, basename(file)));
      [file] = await mods[i].task([basename(file)], pathin, join(work, name, t, 'out'));
    }
    const planted = scene(parseTrigger(readFileSync(trigger, 'utf8'), name)).map(({ lane, shape, x, y }) => ({ track: `lane${lane}`, shape, x, y }));
    expected[jobPrefix(name)] = { output: basename(file), planted, result: JSON.parse(readFileSync(file, 'utf8')) };
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
writeFileSync(join(here, 'expected.json'), `${JSON.stringify(expected, null, 2)}\n`);
console.log(`expected.json: ${Object.keys(expected).length} frames`);
