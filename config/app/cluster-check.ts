// An app against the cluster it will run on: static placement lines and input_node.txt may only
// name compute nodes the cluster configuration knows.
import { join } from 'node:path';
import { inputError } from '../errors.js';
import type { AppSpec, ClusterConfig } from '../types.js';
import { displayPath } from './text.js';

export function validateAppAgainstCluster(app: AppSpec, cluster: ClusterConfig): void {
  const names = new Set(cluster.nodes.map((n) => n.name));
  const hint = `nodes of the cluster (${cluster.source}): ${[...names].join(', ')}`;
  const check = (entries: Record<string, string>, lines: Record<string, number> | undefined, file: string, what: string): void => {
    for (const [task, node] of Object.entries(entries)) {
      if (names.has(node)) continue;
      throw inputError(`${what} puts ${task} on unknown node ${node}${node === cluster.home.name ? ' (the home runs no tasks)' : ''}`, {
        file: displayPath(join(app.dir, file)), line: lines?.[task], hint,
      });
    }
  };
  check(app.staticPlacement, app.sourceLines?.staticPlacement, 'configuration.txt', 'static placement');
  check(app.inputNode, app.sourceLines?.inputNode, 'input_node.txt', 'input_node.txt');
}
