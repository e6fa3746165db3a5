// The bad-input corpus: every folder under test/fixtures/bad-apps and bad-cluster goes through the
// real CLI (`jupiter validate`), which must exit 2 and print the expected `file:line: message`.
import { expect } from 'chai';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliResult } from '../support/cli.js';
import { appsDir, fixturesDir } from '../support/paths.js';

const JUPITER_ENV = ['JUPITER_CONFIG', 'JUPITER_REDIS_URL', 'JUPITER_MQTT_URL', 'JUPITER_MQTT_USERNAME', 'JUPITER_MQTT_PASSWORD', 'JUPITER_MAPPER', 'JUPITER_RUNTIME',
  'JUPITER_MQTT_CA', 'JUPITER_MQTT_CERT', 'JUPITER_MQTT_KEY', 'JUPITER_MQTT_INSECURE'];
const cleanEnv = Object.fromEntries(JUPITER_ENV.map((k) => [k, '']));

interface Case {
  kind: 'bad-apps' | 'bad-cluster';
  name: string;
  dir: string;
  expect: string[];
}

function casesOf(kind: Case['kind']): Case[] {
  const root = join(fixturesDir, kind);
  return readdirSync(root, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => ({
      kind, name: e.name, dir: join(root, e.name),
      expect: readFileSync(join(root, e.name, 'expect.txt'), 'utf8').split('\n').filter((l) => l.trim() !== ''),
    }));
}

/** Write `bytes` of plausible task lines: the loader must refuse on size without reading it all. */
function writeLarge(path: string, bytes: number): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.from('t 1 false home\n'.repeat(4096));
  writeSync(fd, '100000\n');
  for (let n = 0; n < bytes; n += chunk.length) writeSync(fd, chunk);
  closeSync(fd);
}

async function runCase(c: Case, tmp: string): Promise<CliResult> {
  let dir = c.dir;
  const gen = join(c.dir, 'generate.json');
  if (existsSync(gen)) {
    const spec = JSON.parse(readFileSync(gen, 'utf8')) as { file: string; bytes: number };
    dir = join(tmp, c.name);
    cpSync(c.dir, dir, { recursive: true });
    writeLarge(join(dir, spec.file), spec.bytes);
  }
  const envFile = join(c.dir, 'env.json');
  const env = { ...cleanEnv, ...(existsSync(envFile) ? (JSON.parse(readFileSync(envFile, 'utf8')) as Record<string, string>) : {}) };
  const app = c.kind === 'bad-apps' ? '.' : join(appsDir, 'dummy');
  return runCli(['validate', app], { cwd: dir, env });
}

describe('bad input corpus (jupiter validate exits 2 with file:line)', function () {
  this.timeout(120_000);
  const cases = [...casesOf('bad-apps'), ...casesOf('bad-cluster')];
  const results = new Map<string, CliResult>();
  let tmp = '';

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'jupiter-bad-'));
    // Three CLI processes at a time: the corpus is large and each run is mostly start-up.
    const queue = [...cases];
    await Promise.all([0, 1, 2].map(async () => {
      for (let c = queue.shift(); c; c = queue.shift()) results.set(`${c.kind}/${c.name}`, await runCase(c, tmp));
    }));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('has at least 30 cases of each kind together and 15 app folders', () => {
    expect(cases.length).to.be.at.least(30);
    expect(cases.filter((c) => c.kind === 'bad-apps').length).to.be.at.least(15);
  });

  for (const c of cases) {
    it(`${c.kind}/${c.name}: ${c.expect[0]}`, () => {
      const r = results.get(`${c.kind}/${c.name}`)!;
      expect(r.code, r.stderr).to.equal(2);
      expect(r.stderr).to.not.match(/internal error|\n\s+at .+:\d+:\d+/);
      for (const line of c.expect) {
        if (line.startsWith('!')) expect(r.stderr).to.not.include(line.slice(1));
        else expect(r.stderr).to.include(line);
      }
      expect(r.stderr).to.match(/\n {2}hint: \S/);
    });
  }
});
