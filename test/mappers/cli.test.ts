import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { ownTempFolder } from '../support/own-temp.js';
import { topcuogluSample } from './samples.js';

describe('jupiter map', () => {
  let dir = '';
  // Run outside the checkout's config files: the embedded default cluster (node1..node3).
  const env = { JUPITER_CONFIG: '' };
  // With a temp folder of its own, left empty (the CLI runs see it too).
  ownTempFolder(() => rmSync(dir, { recursive: true, force: true }));
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'jupiter-map-'));
  });

  it('rejects an unknown mapper name before contacting any agent or Redis', async () => {
    // A Redis URL nobody listens on: reading live profiles would print `map: cannot connect…`.
    const r = await runCli(['map', 'dummy', '--mapper', 'hft'], { cwd: dir, env: { ...env, JUPITER_REDIS_URL: 'redis://127.0.0.1:1' } });
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/unknown mapper "hft"/);
    expect(r.stderr).to.match(/hint: one of: .*heft/);
    expect(r.stderr).to.not.match(/^map: /m);
  });

  it('deploy rejects an unknown mapper name before starting any service', async () => {
    const r = await runCli(['deploy', 'dummy', '--mapper', 'hft'], { cwd: dir, env });
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/unknown mapper "hft"/);
    expect(existsSync(join(dir, '.jupiter')), 'a stack was started').to.equal(false);
  });

  it('lists mappers', async () => {
    const r = await runCli(['map', '--mapper', 'list']);
    expect(r.code, r.stderr).to.equal(0);
    for (const name of ['heft', 'heft-balanced', 'heft-dup', 'cpop', 'peft', 'fastest-node', 'wave-greedy', 'wave-random', 'best']) expect(r.stdout).to.contain(name);
  });

  it('maps an app with the default local profile and draws a Gantt chart', async () => {
    const r = await runCli(['map', 'dummy', '--mapper', 'heft'], { cwd: dir, env });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.contain('predicted makespan:');
    expect(r.stdout).to.match(/node1 \|[A-Z.]+\|/);
    expect(r.stdout).to.contain('legend: A=task0');
  });

  it('maps a raw problem to JSON', async () => {
    const file = join(dir, 'problem.json');
    writeFileSync(file, JSON.stringify(topcuogluSample(), null, 2));
    const r = await runCli(['map', '--problem', file, '--mapper', 'heft', '--json']);
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout) as { makespan: number; mapping: Record<string, string>; mapper: string };
    expect(out.makespan).to.equal(80);
    expect(out.mapper).to.equal('heft');
    expect(Object.keys(out.mapping)).to.have.length(10);
  });

  it('maps an app with a profiles file', async () => {
    const file = join(dir, 'profiles.json');
    const nodes = ['node1', 'node2', 'node3'];
    writeFileSync(file, JSON.stringify({
      takenAt: 1,
      nodes: nodes.map((node) => ({ node, cpuPercent: 5, cpuMean: 5, memPercent: 5, memMean: 5, cores: 1, load1: 0, freeMemBytes: 1, updatedAt: 1 })),
      links: [],
      exec: [{ app: 'anomaly', task: 'split', node: 'node1', durationSec: 0.5, outputBytes: 1e6, updatedAt: 1 }],
    }));
    const r = await runCli(['map', 'anomaly', '--profiles', file, '--mapper', 'wave-greedy', '--json'], { cwd: dir, env });
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout) as { mapping: Record<string, string> };
    expect(out.mapping.split).to.equal('node1'); // input_node.txt
  });

  it('exits 2 with a clear message on a bad problem', async () => {
    const file = join(dir, 'bad.json');
    const p = topcuogluSample();
    p.edges.push({ from: 'n1', to: 'n99', bytes: 5 });
    writeFileSync(file, JSON.stringify(p, null, 2));
    const r = await runCli(['map', '--problem', file, '--mapper', 'heft']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/bad\.json:\d+: invalid problem: \/edges\/15\/to: unknown task "n99"/);
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"tasks": [}');
    const r2 = await runCli(['map', '--problem', broken]);
    expect(r2.code).to.equal(2);
    expect(r2.stderr).to.contain('invalid JSON');
  });

  it('exits 2 on an unknown mapper', async () => {
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify(topcuogluSample()));
    const r = await runCli(['map', '--problem', file, '--mapper', 'nope']);
    expect(r.code).to.equal(2);
    expect(r.stderr).to.contain('unknown mapper "nope"');
  });
});
