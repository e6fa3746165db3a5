// Problems used by several mapper tests.
import type { Problem } from '../../mappers/index.js';

/** The 10-task, 3-processor sample DAG of Topcuoglu, Hariri and Wu (IEEE TPDS 2002, Fig. 2). */
export function topcuogluSample(): Problem {
  const cost: Record<string, [number, number, number]> = {
    n1: [14, 16, 9], n2: [13, 19, 18], n3: [11, 13, 19], n4: [13, 8, 17], n5: [12, 13, 10],
    n6: [13, 16, 9], n7: [7, 15, 11], n8: [5, 11, 14], n9: [18, 12, 20], n10: [21, 7, 16],
  };
  const edges: Array<[string, string, number]> = [
    ['n1', 'n2', 18], ['n1', 'n3', 12], ['n1', 'n4', 9], ['n1', 'n5', 11], ['n1', 'n6', 14],
    ['n2', 'n8', 19], ['n2', 'n9', 16], ['n3', 'n7', 23], ['n4', 'n8', 27], ['n4', 'n9', 23],
    ['n5', 'n9', 13], ['n6', 'n8', 15], ['n7', 'n10', 17], ['n8', 'n10', 11], ['n9', 'n10', 13],
  ];
  const nodes = ['p1', 'p2', 'p3'];
  return {
    tasks: Object.keys(cost),
    edges: edges.map(([from, to, bytes]) => ({ from, to, bytes })),
    nodes: nodes.map((name) => ({ name })),
    exec: Object.fromEntries(Object.entries(cost).map(([t, c]) => [t, { p1: c[0], p2: c[1], p3: c[2] }])),
    links: [],
    // The paper's communication cost is per edge and the same between any two processors.
    defaultLink: { latencySec: 0, bandwidthBytesPerSec: 1 },
  };
}

/** A problem from configuration.txt-like lines `task child1 child2 ...` (unit costs). */
export function problemFromLines(lines: string[], nodes = ['node1', 'node2', 'node3']): Problem {
  const tasks: string[] = [];
  const edges: Problem['edges'] = [];
  for (const line of lines) {
    const [t, ...children] = line.trim().split(/\s+/);
    tasks.push(t as string);
    for (const c of children) if (c !== 'home' && c !== 'datasink1') edges.push({ from: t as string, to: c, bytes: 1000 });
  }
  return {
    tasks,
    edges,
    nodes: nodes.map((name, i) => ({ name, cpuPercent: 10 + i, memPercent: 20 })),
    exec: Object.fromEntries(tasks.map((t) => [t, Object.fromEntries(nodes.map((n) => [n, 1]))])),
    links: [],
    defaultLink: { latencySec: 0.001, bandwidthBytesPerSec: 1e6 },
  };
}

/** a -> b -> c, 1 MB between tasks, two nodes joined by 100 MB/s (10 ms per MB). */
export function chainProblem(extra: Partial<Problem> = {}): Problem {
  const MB = 1e6;
  return {
    tasks: ['a', 'b', 'c'],
    edges: [{ from: 'a', to: 'b', bytes: MB }, { from: 'b', to: 'c', bytes: MB }],
    nodes: [{ name: 'n1' }, { name: 'n2' }],
    exec: { a: { n1: 0.1, n2: 0.1 }, b: { n1: 0.2, n2: 0.2 }, c: { n1: 0.3, n2: 0.3 } },
    links: [],
    defaultLink: { latencySec: 0, bandwidthBytesPerSec: 100 * MB },
    ...extra,
  };
}
