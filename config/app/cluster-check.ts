// An app against the cluster it will run on: static placement lines may only name compute nodes
// the cluster configuration knows. input_node.txt is read by WAVE alone (as in the original): a
// node it names that the cluster lacks is an error only when the mapper is WAVE, else a warning.
import { join } from 'node:path';
import { inputError } from '../errors.js';
import type { AppSpec, ClusterConfig } from '../types.js';
import { displayPath } from './text.js';

/** Throws for what cannot run; returns warnings (file:line: message) for what is only ignored. */
export function validateAppAgainstCluster(app: AppSpec, cluster: ClusterConfig): string[] {
  const names = new Set(cluster.nodes.map((n) => n.name));
  const hint = `nodes of the cluster (${cluster.source}): ${[...names].join(', ')}`;
  const warnings: string[] = [];
  const check = (entries: Record<string, string>, lines: Record<string, number> | undefined, file: string, what: string, fatal: boolean): void => {
    for (const [task, node] of Object.entries(entries)) {
      if (names.has(node)) continue;
      const message = `${what} puts ${task} on unknown node ${node}${node === cluster.home.name ? ' (the home runs no tasks)' : ''}`;
      const shown = displayPath(join(app.dir, file));
      if (fatal) throw inputError(message, { file: shown, line: lines?.[task], hint });
      warnings.push(`${shown}${lines?.[task] ? `:${lines[task]}` : ''}: warning: ${message}; only the WAVE mappers read it, ${cluster.mapper} ignores it`);
    }
  };
  check(app.staticPlacement, app.sourceLines?.staticPlacement, 'configuration.txt', 'static placement', true);
  check(app.inputNode, app.sourceLines?.inputNode, 'input_node.txt', 'input_node.txt', cluster.mapper.startsWith('wave'));
  return warnings;
}
