// loadApp() on the example apps and on small app folders written into a temp dir, and
// validateAppAgainstCluster().
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isJupiterError, type JupiterError } from '../../config/errors.js';
import { loadApp } from '../../config/app/load.js';
import { validateAppAgainstCluster } from '../../config/app/cluster-check.js';
import { loadClusterConfig } from '../../config/cluster/load.js';
import { appsDir } from '../support/paths.js';

async function rejects(p: Promise<unknown>): Promise<JupiterError> {
  try {
    await p;
  } catch (e) {
    if (isJupiterError(e)) return e;
    throw e;
  }
  throw new Error('expected a JupiterError');
}

/** Write an app folder from a map of relative path -> content. */
function writeApp(root: string, name: string, files: Record<string, string>): string {
  const dir = join(root, name);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), content);
  }
  return dir;
}

const SMALL = {
  'configuration.txt': '3\r\nsrc 1 false work home \r\nwork\t1\ttrue\thome\r\nsetup 1 false setup\r\nsrc node1\r\n',
  'scripts/config.json': JSON.stringify({
    taskname_map: { src: ['src', true], work: ['lib/work', true], setup: ['setup', false, 3, 'x'] },
    exec_profiler: { work: false },
    matrixConfigs: { n: 2 },
  }),
  'scripts/src.ts': 'export async function task(inputs: string[], pathin: string, pathout: string): Promise<string[]> { return []; }\n',
  'scripts/lib/work.js': 'export const task = (inputs, pathin, pathout) => [];\n',
  'scripts/setup.sh': '#!/bin/sh\necho setting up "$@"\n',
  'sample_input/1a.csv': 'x\n',
  'sample_input/2a.csv': 'y\n',
  'sample_input/.hidden': 'ignored\n',
  'input_node.txt': 'task node\nsrc node2\n',
  'app_config.ini': '[DOCKER_PORT]\n  API = 8080\n[SVC_PORT]\n  API = 18080\n',
  'name_convert.txt': 'input a a\nsrc s a\n',
};

describe('loadApp', () => {
  let tmp = '';
  before(() => (tmp = mkdtempSync(join(tmpdir(), 'jupiter-app-'))));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it('loads apps/dummy: 7 tasks, joins, both FLAG modes, Python scripts', async () => {
    const app = await loadApp(join(appsDir, 'dummy'));
    expect(app.name).to.equal('dummy');
    expect(app.dagTasks).to.have.length(7);
    expect(app.entryTasks).to.deep.equal(['task0']);
    expect(app.sinkTasks).to.deep.equal(['task6']);
    expect(app.tasks.filter((t) => t.numInputs > 1).map((t) => t.name)).to.deep.equal(['task4', 'task5', 'task6']);
    expect(new Set(app.tasks.map((t) => t.broadcast))).to.deep.equal(new Set([true, false]));
    expect(app.tasks.every((t) => t.language === 'python' && t.scriptFile.endsWith(`${t.name}.py`))).to.equal(true);
    expect(app.graph.node('task4').numInputs).to.equal(2);
    expect(app.graph.successors('task0')!.sort()).to.deep.equal(['task1', 'task2', 'task3']);
    expect(app.sampleInputs.map((p) => p.split('/').pop())).to.deep.equal(['1botnet.ipsum', '2botnet.ipsum', '3botnet.ipsum', '4botnet.ipsum']);
    expect(app.inputNode).to.deep.equal({ task0: 'node1' });
    expect(app.nameConvert.input).to.deep.equal({ output: 'botnet', input: 'botnet' });
  });

  it('loads apps/anomaly: JavaScript modules, one script shared by three tasks', async () => {
    const app = await loadApp('anomaly', { appsDir });
    expect(app.dagTasks).to.deep.equal(['split', 'detect0', 'detect1', 'detect2', 'fusion']);
    expect(app.graph.node('fusion').numInputs).to.equal(3);
    expect(new Set(app.tasks.filter((t) => t.name.startsWith('detect')).map((t) => t.scriptFile)).size).to.equal(1);
    expect(app.tasks.every((t) => t.language === 'javascript')).to.equal(true);
    expect(app.extra).to.have.property('description');
  });

  it('resolves a name through appsDir, ./apps and the repository', async () => {
    expect((await loadApp('dummy')).dir).to.equal(join(appsDir, 'dummy'));
    const e = await rejects(loadApp('no-such-app'));
    expect(e.message).to.match(/no app named "no-such-app"/);
    expect(e.hint).to.include('dummy');
    expect((await rejects(loadApp('./nowhere/app'))).message).to.match(/no app folder at/);
  });

  it('reads TypeScript, sub-folder scripts, helpers with args, placement, ports, CRLF and tabs', async () => {
    const app = await loadApp(writeApp(tmp, 'small', SMALL));
    expect(app.tasks.map((t) => [t.name, t.isDag, t.language])).to.deep.equal([['src', true, 'typescript'], ['work', true, 'javascript'], ['setup', false, 'shell']]);
    expect(app.tasks[2]!.args).to.deep.equal([3, 'x']);
    expect(app.tasks[1]!.execProfiler).to.equal(false);
    expect(app.dagTasks).to.deep.equal(['src', 'work']);
    expect(app.sinkTasks).to.deep.equal(['src', 'work']);
    expect(app.staticPlacement).to.deep.equal({ src: 'node1' });
    expect(app.sourceLines!.staticPlacement).to.deep.equal({ src: 5 });
    expect(app.ports).to.deep.equal({ docker: { API: 8080 }, service: { API: 18080 } });
    expect(app.sampleInputs).to.have.length(2);
    expect(app.extra).to.deep.equal({ matrixConfigs: { n: 2 } });
  });

  it('refuses a script that is a symlink leading outside the app folder', async () => {
    const { 'scripts/src.ts': _omitted, ...rest } = SMALL;
    const dir = writeApp(tmp, 'linked', rest);
    writeFileSync(join(tmp, 'outside.ts'), 'export function task() { return []; }\n');
    symlinkSync(join(tmp, 'outside.ts'), join(dir, 'scripts/src.ts'));
    expect((await rejects(loadApp(dir))).message).to.match(/leads outside the app folder/);
  });

  it('refuses a 10 MB configuration.txt by its size', async () => {
    const dir = writeApp(tmp, 'huge', SMALL);
    writeFileSync(join(dir, 'configuration.txt'), Buffer.alloc(10 * 1024 * 1024, 'a 1 false home\n'));
    const e = await rejects(loadApp(dir));
    expect(e.message).to.match(/too large \(10485760 bytes/);
  });

  it('refuses an app folder name that is unsafe', async () => {
    const dir = writeApp(tmp, 'bad name', SMALL);
    expect((await rejects(loadApp(dir))).message).to.match(/app name "bad name" is not allowed/);
  });

  it('checks input_node.txt against the cluster: a warning, an error only for WAVE', async () => {
    const app = await loadApp(join(tmp, 'small'));
    const cluster = await loadClusterConfig({ dir: tmp, env: {} });
    expect(validateAppAgainstCluster(app, cluster)).to.deep.equal([]); // node1 and node2 exist in the embedded default
    const two = { ...cluster, nodes: cluster.nodes.filter((n) => n.name !== 'node2') };
    const warnings = validateAppAgainstCluster(app, two);
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.match(/input_node\.txt:2: warning: input_node\.txt puts src on unknown node node2; only the WAVE mappers read it/);
    const e = (() => {
      try {
        validateAppAgainstCluster(app, { ...two, mapper: 'wave-greedy' });
      } catch (err) {
        return err as JupiterError;
      }
      throw new Error('expected an error');
    })();
    expect(e.message).to.equal('input_node.txt puts src on unknown node node2');
    expect(e.line).to.equal(2);
    expect(e.file).to.match(/input_node\.txt$/);
  });
});
