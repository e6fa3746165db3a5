// `jupiter validate` and `jupiter graph` through the real CLI, on every example app.
import { expect } from 'chai';
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { appsDir } from '../support/paths.js';

const clean = { JUPITER_CONFIG: '', JUPITER_RUNTIME: '', JUPITER_MAPPER: '', JUPITER_REDIS_URL: '', JUPITER_MQTT_URL: '' };
const examples = readdirSync(appsDir, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(appsDir, e.name, 'configuration.txt')))
  .map((e) => e.name);

describe('jupiter validate / graph', function () {
  this.timeout(60_000);

  it('has the example apps', () => {
    expect(examples).to.include.members(['dummy', 'anomaly']);
  });

  for (const name of examples) {
    it(`validate apps/${name} exits 0 with a summary table`, async () => {
      const r = await runCli(['validate', `apps/${name}`], { env: clean });
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.match(/task\s.*inputs\s.*flag\s.*children\s.*script\s.*language/);
      expect(r.stdout).to.include(`ok: ${name} is valid`);
      for (const e of readdirSync(join(appsDir, name))) expect(e).to.not.match(/^generated_files$/);
    });
    it(`every example has a README (apps/${name})`, () => {
      expect(existsSync(join(appsDir, name, 'README.md'))).to.equal(true);
    });
  }

  it('graph --format text draws levels with joins, broadcasts and the sink', async () => {
    const r = await runCli(['graph', 'apps/dummy', '--format', 'text'], { env: clean });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.include('level 0 | home -> task0');
    expect(r.stdout).to.match(/level 4 \| task6 \[join 3\] \[sink\]\s+-> home/);
    expect(r.stdout).to.match(/task1 \[broadcast\]\s+-> task4, task5/);
  });

  it('graph --format dot is Graphviz with every edge', async () => {
    const r = await runCli(['graph', 'dummy', '--format', 'dot'], { env: clean });
    expect(r.code).to.equal(0);
    expect(r.stdout.trim()).to.match(/^digraph "dummy" \{[\s\S]*\}$/);
    expect(r.stdout.match(/ -> /g)).to.have.length(1 + 10 + 1);
  });

  it('exits 2 on a bad --format and on a missing app, 0 on --help', async () => {
    expect((await runCli(['graph', 'dummy', '--format', 'svg'])).code).to.equal(2);
    const missing = await runCli(['validate', 'no-such-app']);
    expect(missing.code).to.equal(2);
    expect(missing.stderr).to.match(/no app named "no-such-app"[\s\S]*hint: .*dummy/);
    expect((await runCli(['validate', '--help'])).code).to.equal(0);
    expect((await runCli(['graph', '--version'])).code).to.equal(0);
  });
});
