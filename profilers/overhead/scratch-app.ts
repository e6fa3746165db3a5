// A scratch app the agent's probes run through real task runners (task-probe.ts, local-hop-probe.ts):
// Python tasks in Jupiter's app format, written to a folder the probe removes afterwards.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec } from '../../config/types.js';

export interface ScratchTask {
  name: string;
  /** Children in configuration.txt's sense (`home` for a sink). */
  children: string[];
  /** The Python script: a `task(filename, pathin, pathout)` function. */
  script: string;
}

/** Write the app into appDir (its folder name is the app's name) and load it. */
export async function writeScratchApp(appDir: string, tasks: ScratchTask[]): Promise<AppSpec> {
  await mkdir(join(appDir, 'scripts'), { recursive: true });
  await mkdir(join(appDir, 'sample_input'), { recursive: true });
  await writeFile(join(appDir, 'configuration.txt'), `${tasks.length}\n${tasks.map((t) => `${t.name} 1 true ${t.children.join(' ')}\n`).join('')}`);
  for (const t of tasks) await writeFile(join(appDir, 'scripts', `${t.name}.py`), t.script);
  await writeFile(join(appDir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: Object.fromEntries(tasks.map((t) => [t.name, [t.name, true]])),
    exec_profiler: Object.fromEntries(tasks.map((t) => [t.name, true])),
  }));
  await writeFile(join(appDir, 'sample_input', '1input.txt'), 'probe\n');
  return loadApp(appDir);
}
