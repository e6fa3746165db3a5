// Property-based fuzzing of every parser: whatever the input, the only thing that may escape is
// a JupiterError of kind 'input' (never a TypeError, RangeError or stack overflow). 5,000 runs.
import fc from 'fast-check';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJupiterError } from '../../config/errors.js';
import { parseConfiguration } from '../../config/app/configuration.js';
import { buildDag } from '../../config/app/dag.js';
import { parseConfigJson } from '../../config/app/config-json.js';
import { parseAppConfigIni } from '../../config/app/ini.js';
import { parseNameConvert } from '../../config/app/name-convert.js';
import { parseInputNode } from '../../config/app/input-node.js';
import { decodeText } from '../../config/app/text.js';
import { parseNodesTxt } from '../../config/cluster/nodes-txt.js';
import { loadClusterConfig, parseClusterConfigText } from '../../config/cluster/load.js';

/** Runs fn; passes when it returns or throws an input JupiterError. */
function onlyInputErrors(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch (e) {
    if (isJupiterError(e) && e.kind === 'input') return true;
    throw e;
  }
}

async function onlyInputErrorsAsync(fn: () => Promise<unknown>): Promise<boolean> {
  try {
    await fn();
    return true;
  } catch (e) {
    if (isJupiterError(e) && e.kind === 'input') return true;
    throw e;
  }
}

// Building blocks close enough to real files that the parsers get deep, plus plain noise.
const name = fc.oneof(fc.constantFrom('a', 'b', 'c', 'd', 'home', 'task0', 'node1', 'input', '__proto__', 'constructor'), fc.string({ maxLength: 6 }));
const sep = fc.constantFrom(' ', '\t', '  ', ' \t');
const eol = fc.constantFrom('\n', '\r\n', '\r', ' \n');
const fieldsLine = (min: number, max: number) => fc.tuple(fc.array(name, { minLength: min, maxLength: max }), sep).map(([f, s]) => f.join(s));
const text = (line: fc.Arbitrary<string>) => fc.tuple(fc.array(fc.oneof({ weight: 4, arbitrary: line }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) }), { maxLength: 12 }), eol).map(([ls, e]) => ls.join(e));

const taskLine = fc.tuple(name, fc.oneof(fc.constantFrom('1', '2', '3', '0', '-1', '99999999999'), fc.string({ maxLength: 3 })),
  fc.oneof(fc.constantFrom('true', 'false', 'TRUE'), fc.string({ maxLength: 5 })), fc.array(name, { maxLength: 4 }), sep)
  .map(([n, i, f, c, s]) => [n, i, f, ...c].join(s));
const configurationTxt = fc.tuple(fc.oneof(fc.constantFrom('1', '2', '3', '4', '0'), fc.string({ maxLength: 3 })), text(fc.oneof(taskLine, fieldsLine(2, 2))), eol)
  .map(([n, rest, e]) => n + e + rest);

const jsonValue = fc.oneof(fc.constant(true), fc.constant(false), fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null));
const configJson = fc.oneof(
  fc.json(),
  fc.record({
    taskname_map: fc.dictionary(name, fc.oneof(fc.tuple(fc.string({ maxLength: 8 }), fc.boolean()), fc.array(jsonValue, { maxLength: 4 }), jsonValue)),
    exec_profiler: fc.oneof(fc.dictionary(name, fc.oneof(fc.boolean(), jsonValue)), jsonValue),
  }, { requiredKeys: [] }).map((o) => JSON.stringify(o, null, 1)),
).chain((s) => fc.oneof(fc.constant(s), fc.nat({ max: Math.max(0, s.length) }).map((k) => s.slice(0, k))));

const iniText = text(fc.oneof(
  fc.constantFrom('[DOCKER_PORT]', '[SVC_PORT]', '[OTHER]', '[', '[DOCKER_PORT.x]', '; c', '# c'),
  fc.tuple(name, fc.oneof(fc.constantFrom('8080', '0', '65536', '"80"', '1 ; c'), fc.string({ maxLength: 6 }))).map(([k, v]) => `  ${k} = ${v}`),
));

const clusterJson = fc.oneof(
  fc.json(),
  fc.record({
    redis: fc.record({ url: fc.oneof(fc.constantFrom('redis://h:6379', 'rediss://:p@h', 'redis://', 'http://x'), fc.string({ maxLength: 10 })), prefix: fc.string({ maxLength: 5 }) }, { requiredKeys: [] }),
    mqtt: fc.record({ url: fc.constantFrom('mqtt://h:1883', 'ws://h', 'mqtt://'), username: fc.string({ maxLength: 4 }), compat: fc.oneof(fc.boolean(), jsonValue) }, { requiredKeys: [] }),
    runtime: fc.oneof(fc.constantFrom('process', 'docker'), fc.string({ maxLength: 5 })),
    docker: fc.record({ network: fc.constantFrom('host', 'bridge', 'x'), cpus: fc.double(), memoryMb: fc.integer() }, { requiredKeys: [] }),
    nodes: fc.array(fc.record({
      name,
      host: fc.oneof(fc.constantFrom('127.0.0.1', '10.0.0.2', 'localhost', '[::1]'), fc.string({ maxLength: 6 })),
      docker: fc.oneof(fc.constantFrom('unix:///var/run/docker.sock', 'unix://x', 'tcp://h:2376', 'tcp://', 'ssh://u@h:22', 'ssh://u:p@h', 'tcp://h:99999'), fc.string({ maxLength: 6 })),
      agent: fc.oneof(fc.constantFrom('h:7070', 'h:0', '[::1]:80', ':80'), fc.string({ maxLength: 6 })),
      tls: fc.record({ ca: fc.constantFrom('ca.pem', 'missing.pem') }, { requiredKeys: [] }),
    }, { requiredKeys: ['name'] }), { maxLength: 4 }),
  }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
);

describe('fuzzing every parser (only JupiterError escapes)', function () {
  this.timeout(60_000);
  let tmp = '';
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'jupiter-fuzz-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('configuration.txt + DAG rules (1,500 runs)', () => {
    fc.assert(fc.property(configurationTxt, (t) => onlyInputErrors(() => buildDag('f', parseConfiguration(t, 'c').tasks, 'c'))), { numRuns: 1500 });
  });

  it('configuration.txt accepts every generated valid DAG (200 runs)', () => {
    // Random DAGs: children only among later tasks (acyclic), NUM_INPUTS = number of parents
    // (1 for entries), childless tasks send home. Every one must load, with the same edges.
    const dag = fc.integer({ min: 1, max: 12 }).chain((n) => fc.array(fc.array(fc.boolean(), { minLength: n, maxLength: n }), { minLength: n, maxLength: n }).map((m) => {
      const kids = Array.from({ length: n }, (_, i) => m[i]!.map((on, j) => (on && j > i ? `t${j}` : '')).filter(Boolean));
      const parents = Array.from({ length: n }, (_, j) => kids.filter((k) => k.includes(`t${j}`)).length);
      const lines = kids.map((k, i) => `t${i} ${Math.max(1, parents[i]!)} ${i % 2 ? 'true' : 'false'} ${(k.length ? k : ['home']).join(' ')}`);
      return { text: `${n}\n${lines.join('\n')}\n`, edges: kids.reduce((a, k) => a + k.length, 0) };
    }));
    fc.assert(fc.property(dag, ({ text: t, edges }) => {
      const d = buildDag('g', parseConfiguration(t, 'c').tasks, 'c');
      return d.graph.edgeCount() === edges && d.entryTasks[0] === 't0';
    }), { numRuns: 200 });
  });

  it('scripts/config.json (800 runs)', () => {
    fc.assert(fc.property(configJson, (t) => onlyInputErrors(() => parseConfigJson(t, 'j'))), { numRuns: 800 });
  });

  it('app_config.ini (500 runs)', () => {
    fc.assert(fc.property(iniText, (t) => onlyInputErrors(() => parseAppConfigIni(t, 'i'))), { numRuns: 500 });
  });

  it('name_convert.txt and input_node.txt (300 + 300 runs)', () => {
    fc.assert(fc.property(text(fieldsLine(1, 4)), (t) => onlyInputErrors(() => parseNameConvert(t, 'n'))), { numRuns: 300 });
    fc.assert(fc.property(fc.tuple(fc.constantFrom('task node\n', 'task\tnode\r\n', ''), text(fieldsLine(1, 3))).map(([h, t]) => h + t),
      (t) => onlyInputErrors(() => parseInputNode(t, 'i'))), { numRuns: 300 });
  });

  it('nodes.txt (400 runs)', () => {
    const nodes = fc.tuple(fc.constantFrom('home 127.0.0.1\n', 'home h root pw\r\n', ''), text(fieldsLine(1, 4))).map(([h, t]) => h + t);
    fc.assert(fc.property(nodes, (t) => onlyInputErrors(() => parseNodesTxt(t, 'n'))), { numRuns: 400 });
  });

  it('text decoding of random bytes (300 runs)', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (b) => onlyInputErrors(() => decodeText(b, 'f'))), { numRuns: 300 });
  });

  it('jupiter.config.json: schema (300 runs) and the whole loader from disk (400 runs)', async () => {
    fc.assert(fc.property(clusterJson, (t) => onlyInputErrors(() => parseClusterConfigText(t, 'j'))), { numRuns: 300 });
    const dir = join(tmp, 'cluster');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'ca.pem'), 'x');
    await fc.assert(fc.asyncProperty(clusterJson, fc.option(text(fieldsLine(1, 3)), { nil: undefined }), async (t, nodesTxt) => {
      writeFileSync(join(dir, 'jupiter.config.json'), t);
      rmSync(join(dir, 'nodes.txt'), { force: true });
      if (nodesTxt !== undefined) writeFileSync(join(dir, 'nodes.txt'), nodesTxt);
      return onlyInputErrorsAsync(() => loadClusterConfig({ dir, env: {} }));
    }), { numRuns: 400 });
  });
});
