// Unit tests of every app and cluster parser, one rule at a time.
import { expect } from 'chai';
import { isJupiterError, type JupiterError } from '../../config/errors.js';
import { parseConfiguration } from '../../config/app/configuration.js';
import { buildDag, findCycle, taskDepths } from '../../config/app/dag.js';
import { parseConfigJson } from '../../config/app/config-json.js';
import { parseAppConfigIni } from '../../config/app/ini.js';
import { parseNameConvert } from '../../config/app/name-convert.js';
import { parseInputNode } from '../../config/app/input-node.js';
import { definesTask } from '../../config/app/scripts.js';
import { jobPrefix } from '../../config/app/job.js';
import { decodeText, firstInvalidUtf8, splitLines } from '../../config/app/text.js';
import { parseNodesTxt } from '../../config/cluster/nodes-txt.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { parseDockerEndpoint, parseHostPort, parseClusterConfigText } from '../../config/cluster/load.js';

/** The JupiterError thrown by fn (fails the test if it does not throw one). */
function thrown(fn: () => unknown): JupiterError {
  try {
    fn();
  } catch (e) {
    if (isJupiterError(e)) return e;
    throw e;
  }
  throw new Error('expected a JupiterError');
}

const F = 'configuration.txt';
const DUMMY = '7\ntask0 1 false task1 task2 task3\ntask1 1 true task4 task5\ntask2 1 false task4 task6\ntask3 1 true task5\ntask4 2 false task6\ntask5 2 true task6\ntask6 3 false home\n';

describe('configuration.txt parser', () => {
  it('reads N, task lines, FLAGs, children and the sink', () => {
    const c = parseConfiguration(DUMMY, F);
    expect(c.declared).to.equal(7);
    expect(c.tasks.map((t) => t.name)).to.deep.equal(['task0', 'task1', 'task2', 'task3', 'task4', 'task5', 'task6']);
    expect(c.tasks[1]).to.include({ numInputs: 1, broadcast: true, isDag: true, line: 3 });
    expect(c.tasks[6]!.children).to.deep.equal(['home']);
  });

  it('accepts CRLF, trailing spaces, tabs, blank lines and comments', () => {
    const text = '# the DAG\r\n3 \r\n\r\na\t1\tfalse  b c \r\nb 1 TRUE c\t\r\nc 2 false home   \r\n\r\n';
    const c = parseConfiguration(text, F);
    expect(c.tasks.map((t) => [t.name, t.line, t.broadcast])).to.deep.equal([['a', 4, false], ['b', 5, true], ['c', 6, false]]);
  });

  it('recognises `<name> 1 false <name>` as a non-DAG helper', () => {
    const c = parseConfiguration('2\na 1 false home\nh 1 false h\n', F);
    expect(c.tasks[1]).to.include({ name: 'h', isDag: false });
  });

  it('reads trailing static placement lines', () => {
    const c = parseConfiguration('2\na 1 false b\nb 1 false home\na node1\nb node2\n', F);
    expect(c.placement).to.deep.equal([{ task: 'a', node: 'node1', line: 4 }, { task: 'b', node: 'node2', line: 5 }]);
  });

  it('NUM_INPUTS counts files of a job: known at run time with a FLAG-true parent or the home', () => {
    // An entry task fed two files of a job by the home; a child of one FLAG-true parent that
    // emits two files per job; a join of two FLAG-true parents.
    const text = '4\nsrc 2 true l r\nl 2 true join\nr 2 true join\njoin 2 false home\n';
    const tasks = parseConfiguration(text, F).tasks;
    expect(buildDag('x', tasks, F).entryTasks).to.deep.equal(['src']);
  });
  it('reads the later versions\' sink names (datasink1, scheduler) as home', () => {
    const tasks = parseConfiguration('2\na 1 false b\nb 1 false datasink1\n', F).tasks;
    expect(tasks[1]!.children).to.deep.equal(['home']);
    expect(buildDag('x', tasks, F).sinkTasks).to.deep.equal(['b']);
  });

  const bad: Array<[string, string, number, RegExp]> = [
    ['N larger than the task lines', '3\na 1 false home\nb 1 false home\n', 1, /N is 3 but there are 2 task line/],
    ['N smaller than the task lines', '1\na 1 false home\nb 1 false home\n', 3, /more task lines than N = 1/],
    ['N not a number', 'x\na 1 false home\n', 1, /first line must be the number of tasks/],
    ['N zero', '0\n', 1, /N is 0/],
    ['duplicate task', '2\na 1 false home\na 1 false home\n', 3, /duplicate task a \(first defined on line 2\)/],
    ['FLAG not true/false', '1\na 1 maybe home\n', 2, /FLAG of a must be true or false/],
    ['NUM_INPUTS not a number', '1\na one false home\n', 2, /NUM_INPUTS of a must be a whole number/],
    ['no children', '1\na 1 false\n', 2, /task a has no children/],
    ['self-loop that is not a helper', '1\na 1 true a\n', 2, /lists itself as its child/],
    ['unsafe task name', '1\na/b 1 false home\n', 2, /task name "a\/b" is not allowed/],
    ['shell metacharacters', '1\na`id` 1 false home\n', 2, /is not allowed/],
    ['too long a name', `1\n${'a'.repeat(65)} 1 false home\n`, 2, /is not allowed/],
    ['home as a task', '1\nhome 1 false home\n', 2, /reserved/],
    ['placement naming an unknown task', '1\na 1 false home\nzz node1\n', 3, /static placement names unknown task "zz"/],
    ['placement twice', '1\na 1 false home\na node1\na node2\n', 4, /placed twice/],
    ['unsafe node name', '1\na 1 false home\na ../x\n', 3, /node name/],
    ['one-field line', '1\na\n', 2, /cannot read line/],
  ];
  for (const [what, text, line, msg] of bad) {
    it(`refuses ${what} at line ${line}`, () => {
      const e = thrown(() => parseConfiguration(text, F));
      expect(e.kind).to.equal('input');
      expect(e.file).to.equal(F);
      expect(e.line).to.equal(line);
      expect(e.message).to.match(msg);
      expect(e.hint).to.be.a('string').with.length.greaterThan(0);
    });
  }
});

describe('DAG rules', () => {
  const dag = (text: string) => buildDag('t', parseConfiguration(text, F).tasks, F);

  it('builds a graphlib graph with entry and sink tasks', () => {
    const d = dag(DUMMY);
    expect(d.graph.nodeCount()).to.equal(7);
    expect(d.graph.edgeCount()).to.equal(10);
    expect(d.graph.graph()).to.equal('t');
    expect(d.graph.predecessors('task6')!.sort()).to.deep.equal(['task2', 'task4', 'task5']);
    expect(d.entryTasks).to.deep.equal(['task0']);
    expect(d.sinkTasks).to.deep.equal(['task6']);
    const depth = taskDepths(d.graph, d.dagTasks);
    expect(Object.fromEntries(depth)).to.deep.equal({ task0: 0, task1: 1, task2: 1, task3: 1, task4: 2, task5: 2, task6: 3 });
  });

  it('keeps helpers out of the graph', () => {
    const d = dag('2\na 1 false home\nh 1 false h\n');
    expect(d.graph.nodes()).to.deep.equal(['a']);
    expect(d.dagTasks).to.deep.equal(['a']);
  });

  it('names the cycle', () => {
    const e = thrown(() => dag('4\na 1 false b\nb 2 false c\nc 1 false d\nd 1 false b home\n'));
    expect(e.message).to.equal('cycle: b -> c -> d -> b');
    expect(e.line).to.equal(3);
    expect(findCycle(parseConfiguration('1\na 1 false home\n', F).tasks)).to.equal(undefined);
  });

  it('finds cycles in a 10,000-task chain without overflowing the stack', () => {
    const n = 10_000;
    const lines = Array.from({ length: n }, (_, i) => `t${i} 1 false ${i === n - 1 ? 't0' : `t${i + 1}`}`);
    const cycle = findCycle(parseConfiguration(`${n}\n${lines.join('\n')}\n`, F).tasks);
    expect(cycle).to.have.length(n + 1);
  });

  const bad: Array<[string, string, number, RegExp]> = [
    ['unknown child', '1\na 1 false b\n', 2, /task a has unknown child b/],
    ['NUM_INPUTS differing from FLAG-false parents', '3\na 1 false b c\nb 1 false c\nc 1 false home\n', 4, /NUM_INPUTS of c is 1, but it has 2 DAG parent\(s\) with FLAG false: a, b/],
    ['a first line that is not an entry task', '2\nb 1 false home\na 1 false b\n', 2, /first task b is not an entry task/],
    ['only helpers', '1\nh 1 false h\n', 2, /no entry task/],
    ['a helper as a child', '2\na 1 false h\nh 1 false h\n', 2, /non-DAG helper/],
  ];
  for (const [what, text, line, msg] of bad) {
    it(`refuses ${what}`, () => {
      const e = thrown(() => dag(text));
      expect([e.line, e.message]).to.satisfy(([l, m]: [number, string]) => l === line && msg.test(m));
    });
  }
});

describe('scripts/config.json parser', () => {
  const J = 'scripts/config.json';
  it('reads taskname_map, exec_profiler and keeps extra keys', () => {
    const text = '{\n "taskname_map": {\n  "a": ["a", true],\n  "h": ["helper", false, 0, "x", true]\n },\n "exec_profiler": {"a": false},\n "PortNum": 5000\n}\n';
    const c = parseConfigJson(text, J);
    expect(c.tasks.get('a')).to.deep.equal({ script: 'a', isDag: true, args: [], line: 3 });
    expect(c.tasks.get('h')!.args).to.deep.equal([0, 'x', true]);
    expect(c.execProfiler.get('a')).to.equal(false);
    expect(c.extra).to.deep.equal({ PortNum: 5000 });
  });

  it('keeps a "__proto__" key as plain data', () => {
    const c = parseConfigJson('{"taskname_map": {}, "__proto__": {"polluted": true}}', J);
    expect(Object.getPrototypeOf(c.extra)).to.equal(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
  });

  const bad: Array<[string, string, number, RegExp]> = [
    ['a syntax error (line of the error)', '{\n "taskname_map": {\n  "a": ["a", true],\n }\n}', 4, /invalid JSON/],
    ['truncated JSON', '{\n "taskname_map": {', 2, /invalid JSON/],
    ['an array', '[]', 1, /must be a JSON object/],
    ['no taskname_map', '{"x": 1}', 1, /must have required property 'taskname_map'/],
    ['a non-boolean is_dag', '{\n "taskname_map": {\n  "a": ["a", 1]\n }\n}', 3, /taskname_map.a.1 must be boolean/],
    ['a too-short entry', '{\n "taskname_map": {\n  "a": ["a"]\n }\n}', 3, /must NOT have fewer than 2 items/],
    ['a non-boolean exec_profiler', '{"taskname_map": {},\n "exec_profiler": {\n "a": "yes"}}', 3, /exec_profiler.a must be boolean/],
  ];
  for (const [what, text, line, msg] of bad) {
    it(`refuses ${what}`, () => {
      const e = thrown(() => parseConfigJson(text, J));
      expect(e.file).to.equal(J);
      expect(e.message).to.match(msg);
      expect(e.line).to.equal(line);
    });
  }
});

describe('app_config.ini parser', () => {
  const I = 'app_config.ini';
  it('reads indented ports, comments and empty sections', () => {
    const p = parseAppConfigIni('; ports\n[DOCKER_PORT]\n    PYTHON_PORT = 57021 ; inline\n[SVC_PORT]\n    PYTHON_PORT = 57021\n', I);
    expect(p).to.deep.equal({ docker: { PYTHON_PORT: 57021 }, service: { PYTHON_PORT: 57021 } });
    expect(parseAppConfigIni('[DOCKER_PORT]\n[SVC_PORT]\n', I)).to.deep.equal({ docker: {}, service: {} });
    expect(parseAppConfigIni('', I)).to.deep.equal({ docker: {}, service: {} });
  });
  const bad: Array<[string, string, number, RegExp]> = [
    ['an unknown section', '[PORT]\n', 1, /unknown section \[PORT\]/],
    ['an entry outside a section', 'A = 1\n', 1, /outside a section/],
    ['a non-port value', '[DOCKER_PORT]\nA = http\n', 2, /must be a port number/],
    ['port 0', '[DOCKER_PORT]\nA = 0\n', 2, /must be a port number/],
    ['a key set twice', '[DOCKER_PORT]\nA = 1\nA = 2\n', 3, /set twice/],
    ['a garbage line', '[DOCKER_PORT]\n?!\n', 2, /cannot read line/],
    ['a service port without a docker port', '[DOCKER_PORT]\n[SVC_PORT]\nB = 80\n', 3, /no \[DOCKER_PORT\] entry/],
    ['a "__proto__" port name', '[DOCKER_PORT]\n__proto__ = 1\n', 2, /not allowed/],
  ];
  for (const [what, text, line, msg] of bad) {
    it(`refuses ${what}`, () => {
      const e = thrown(() => parseAppConfigIni(text, I));
      expect([e.line, e.message]).to.satisfy(([l, m]: [number, string]) => l === line && msg.test(m));
    });
  }
});

describe('name_convert.txt and input_node.txt parsers', () => {
  it('reads name_convert lines', () => {
    const m = parseNameConvert('input global botnet\nlocalpro split botnet \r\n', 'n');
    expect(m.get('input')).to.deep.equal({ output: 'global', input: 'botnet', line: 1 });
    expect(m.get('localpro')!.output).to.equal('split');
  });
  it('refuses wrong field counts; a repeated task is fine (the last line wins, as in the original)', () => {
    expect(thrown(() => parseNameConvert('a b\n', 'n')).line).to.equal(1);
    expect(parseNameConvert('fusion fusion human\nfusion fusion car\n', 'n').get('fusion')).to.deep.equal({ output: 'fusion', input: 'car', line: 2 });
  });
  it('reads input_node.txt with tabs or spaces after the header', () => {
    const m = parseInputNode('task\tnode\nlocalpro\tnode3\nother  node2\n', 'i');
    expect(m.get('localpro')).to.deep.equal({ node: 'node3', line: 2 });
    expect(m.get('other')!.node).to.equal('node2');
  });
  it('refuses a missing header, wrong field counts and unsafe nodes', () => {
    expect(thrown(() => parseInputNode('a node1\n', 'i')).message).to.match(/header/);
    expect(thrown(() => parseInputNode('task node\na\n', 'i')).line).to.equal(2);
    expect(thrown(() => parseInputNode('task node\na n;x\n', 'i')).message).to.match(/node name/);
  });
});

describe('text files', () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  it('decodes UTF-8, drops a BOM and splits any line ending', () => {
    expect(decodeText(enc('\ufeffhé\r\nx'), 'f')).to.equal('hé\r\nx');
    expect(splitLines('a\r\nb\nc\rd')).to.deep.equal(['a', 'b', 'c', 'd']);
  });
  it('refuses empty, binary and non-UTF-8 content with the line', () => {
    expect(thrown(() => decodeText(enc(' \n\t\n'), 'f')).message).to.match(/empty/);
    expect(thrown(() => decodeText(Uint8Array.from([0x61, 0x0a, 0x00]), 'f')).line).to.equal(2);
    const e = thrown(() => decodeText(Uint8Array.from([0x61, 0x0a, 0x0a, 0xc3, 0x28]), 'f'));
    expect([e.line, e.message]).to.satisfy(([l, m]: [number, string]) => l === 3 && /UTF-8/.test(m));
  });
  it('finds invalid UTF-8 like the platform decoder does', () => {
    const samples = [[0xe2, 0x82, 0xac], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc0, 0xaf], [0xf0, 0x9f, 0x98, 0x80], [0xe2, 0x82]];
    for (const s of samples) {
      const buf = Uint8Array.from(s);
      let ok = true;
      try {
        new TextDecoder('utf-8', { fatal: true }).decode(buf);
      } catch {
        ok = false;
      }
      expect(firstInvalidUtf8(buf) === -1, JSON.stringify(s)).to.equal(ok);
    }
  });
});

describe('task script detection (by reading, never running)', () => {
  it('finds a top-level Python def task(', () => {
    expect(definesTask('import os\n\ndef task(filename, pathin, pathout):\n    return []\n', 'python')).to.equal(true);
    expect(definesTask('class A:\n    def task(self):\n        pass\n', 'python')).to.equal(false);
    expect(definesTask('# def task(x):\n', 'python')).to.equal(false);
  });
  it('finds an exported JavaScript/TypeScript task', () => {
    const yes = [
      'export function task(inputs, pathin, pathout) {}',
      'export async function task(inputs) {}',
      'export const task = async (inputs) => [];',
      'async function run() {}\nexport { run as task };',
      'function task() {}\nexport { other, task };',
      'export function task<T>(inputs: string[]): string[] { return []; }',
      'exports.task = function () {};',
      'module.exports = { task };',
    ];
    for (const src of yes) expect(definesTask(src, 'javascript'), src).to.equal(true);
    const no = ['function task() {}', '// export function task() {}', '/* export const task = 1 */', 'export function tasks() {}', 'export { taskRunner };'];
    for (const src of no) expect(definesTask(src, 'typescript'), src).to.equal(false);
  });
});

describe('job prefix', () => {
  it('is the name before the first `_`, else before the first `.`', () => {
    expect(jobPrefix('1botnet.ipsum')).to.equal('1botnet');
    expect(jobPrefix('/in/1botnet_task0_task1')).to.equal('1botnet');
    expect(jobPrefix('a.b_c')).to.equal('a.b');
    expect(jobPrefix('plain')).to.equal('plain');
  });
});

describe('nodes.txt parser', () => {
  it('reads home first, ignores legacy user/password columns', () => {
    const n = parseNodesTxt('home h0 root PASSWORD\nnode2 h2 root PASSWORD \r\n\nnode3\th3\n', 'nodes.txt');
    expect(n).to.deep.equal([{ name: 'home', host: 'h0', line: 1 }, { name: 'node2', host: 'h2', line: 2 }, { name: 'node3', host: 'h3', line: 4 }]);
    expect(JSON.stringify(n)).to.not.include('PASSWORD');
  });
  it('refuses a non-home first line, duplicates, bad hosts and a lone home', () => {
    expect(thrown(() => parseNodesTxt('node1 a\nhome b\n', 'n')).message).to.match(/first node must be home/);
    expect(thrown(() => parseNodesTxt('home a\nx b\nx c\n', 'n')).line).to.equal(3);
    expect(thrown(() => parseNodesTxt('home a\nx b;c\n', 'n')).message).to.match(/not a host/);
    expect(thrown(() => parseNodesTxt('home a\n', 'n')).message).to.match(/no compute nodes/);
  });
});

describe('cluster configuration pieces', () => {
  it('masks passwords in URLs, keeping the rest as written', () => {
    expect(maskUrl('redis://user:secret@10.0.0.1:6379/0')).to.equal('redis://user:***@10.0.0.1:6379/0');
    expect(maskUrl('rediss://:p/a@ss@host:6380')).to.equal('rediss://:***@host:6380');
    expect(maskUrl('mqtt://10.0.0.1:1883')).to.equal('mqtt://10.0.0.1:1883');
    expect(maskUrl('redis://user@host')).to.equal('redis://user@host');
    expect(maskUrl(undefined)).to.equal('');
  });
  it('parses Docker endpoints', () => {
    expect(parseDockerEndpoint('unix:///var/run/docker.sock')).to.deep.equal({ kind: 'socket', socketPath: '/var/run/docker.sock' });
    expect(parseDockerEndpoint('tcp://10.0.0.2')).to.deep.equal({ kind: 'tcp', host: '10.0.0.2', port: 2375 });
    expect(parseDockerEndpoint('tcp://10.0.0.2', { ca: '/ca.pem' })).to.deep.equal({ kind: 'tcp', host: '10.0.0.2', port: 2376, tls: { ca: '/ca.pem' } });
    expect(parseDockerEndpoint('ssh://jupiter@edge1:2222')).to.deep.equal({ kind: 'ssh', host: 'edge1', port: 2222, username: 'jupiter' });
    expect(parseDockerEndpoint('ssh://root:pw@edge1')).to.be.a('string').that.matches(/no passwords/);
    expect(parseDockerEndpoint('unix://relative.sock')).to.be.a('string');
  });
  it('parses host:port', () => {
    expect(parseHostPort('10.0.0.2:7070')).to.deep.equal({ host: '10.0.0.2', port: 7070 });
    expect(parseHostPort('[::1]:80')).to.deep.equal({ host: '::1', port: 80 });
    expect(parseHostPort('host:0')).to.equal(undefined);
    expect(parseHostPort('host')).to.equal(undefined);
  });
  it('schema-checks jupiter.config.json with the line of the bad key', () => {
    expect(parseClusterConfigText('{"runtime": "docker", "docker": {"network": "bridge", "cpus": 0.5}}', 'j')).to.deep.equal({ runtime: 'docker', docker: { network: 'bridge', cpus: 0.5 } });
    const e = thrown(() => parseClusterConfigText('{\n "mqtt": {\n  "compat": "yes"\n }\n}', 'j'));
    expect([e.line, e.message]).to.deep.equal([3, 'mqtt.compat must be boolean']);
  });
});
