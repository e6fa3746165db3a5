// Small apps and cluster configurations for the docker runtime tests.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Graph } from '@dagrejs/graphlib';
import type { AppSpec, ClusterConfig, DockerEndpoint, TaskSpec } from '../../config/types.js';
import { DEFAULT_BASE_IMAGE } from '../../circe/runtime/docker-base.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';

/** A linear chain of `count` python tasks (task0 -> task1 -> ... -> home) in a temp folder. */
export function chainApp(name: string, count: number): { app: AppSpec; cleanup(): void } {
  // loadApp names an app after its folder.
  const parent = mkdtempSync(join(tmpdir(), 'jupiter-apps-'));
  const dir = join(parent, name);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'));
  const names = Array.from({ length: count }, (_, i) => `task${i}`);
  const lines = names.map((t, i) => `${t} 1 false ${names[i + 1] ?? 'home'}`);
  writeFileSync(join(dir, 'configuration.txt'), `${count}\n${lines.join('\n')}\n`);
  writeFileSync(join(dir, 'app_config.ini'), '[DOCKER_PORT]\n[SVC_PORT]\n');
  writeFileSync(join(dir, 'name_convert.txt'), names.map((t) => `${t} ${t}out ${t}in`).join('\n') + '\n');
  const taskmap: Record<string, [string, boolean]> = {};
  for (const t of names) {
    taskmap[t] = [t, true];
    writeFileSync(join(dir, 'scripts', `${t}.py`), [
      'import os, shutil',
      'def task(filename, pathin, pathout):',
      '    out = os.path.join(pathout, os.path.basename(filename))',
      '    shutil.copy(os.path.join(pathin, filename), out)',
      '    return [out]',
      '',
    ].join('\n'));
  }
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({ taskname_map: taskmap, exec_profiler: {} }, null, 2));
  writeFileSync(join(dir, 'sample_input', '1item.txt'), 'hello\n');
  // Typed as AppSpec declares it; the node labels are the TaskSpecs.
  const graph = new Graph() as AppSpec['graph'];
  const tasks: TaskSpec[] = names.map((t, i) => ({
    name: t, numInputs: 1, broadcast: false, children: [names[i + 1] ?? 'home'], isDag: true, script: t,
    scriptFile: join(dir, 'scripts', `${t}.py`), language: 'python', args: [], execProfiler: true, line: i + 2,
  }));
  for (const t of tasks) graph.setNode(t.name, t as never);
  for (let i = 0; i + 1 < names.length; i++) graph.setEdge(names[i] as string, names[i + 1] as string);
  const app: AppSpec = {
    name, dir, tasks, dagTasks: names, entryTasks: names.slice(0, 1), sinkTasks: names.slice(-1), graph,
    staticPlacement: {}, ports: { docker: {}, service: {} }, nameConvert: {}, inputNode: {},
    sampleInputs: [join(dir, 'sample_input', '1item.txt')], extra: {},
  };
  return { app, cleanup: () => rmSync(parent, { recursive: true, force: true }) };
}

/** A cluster whose nodes use the given engines. */
export function dockerCluster(nodes: Array<{ name: string; endpoint: DockerEndpoint }>, docker: Partial<ClusterConfig['docker']> = {}): ClusterConfig {
  return {
    source: 'test cluster',
    embedded: false,
    redisUrl: 'redis://127.0.0.1:6379',
    mqtt: { compat: false },
    mapper: 'heft',
    runtime: 'docker',
    dataPath: 'central',
    home: { name: 'home', host: '127.0.0.1' },
    nodes: nodes.map((n) => ({ name: n.name, host: '127.0.0.1', docker: n.endpoint })),
    docker: { baseImage: DEFAULT_BASE_IMAGE, network: 'host', cpus: 0.5, memoryMb: 256, ...docker },
    redisPrefix: 'jupitertest:',
    stateDir: '.jupiter',
  };
}

export function specsFor(app: AppSpec, mapping: Record<string, string>, redisUrl: string, runId = 'r1'): RunnerSpec[] {
  return app.dagTasks.map((task) => ({
    app: app.name, task, node: mapping[task] as string, runId, redisUrl, redisPrefix: 'jupitertest:',
  }));
}
