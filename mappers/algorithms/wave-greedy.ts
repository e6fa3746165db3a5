// WAVE greedy: each controller places its children with chooseNodeGreedy() on its own view
// (its outgoing links, everyone's cpu%/mem%, its own reuse penalties). The volume is the real
// edge volume from the controlling parent to the child. Entry tasks go to problem.entryNodes
// (input_node.txt) when given and possible, else the home picks the candidate with the smallest
// cpu% + mem% (the home has no link profile of its own).
import { HOME } from '../../config/types.js';
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import type { GreedyView } from '../wave.js';
import { candidatesOf, chooseNodeGreedy, viewOf } from '../wave.js';
import { runWave } from './wave-run.js';

export function waveGreedy(problem: Problem, _opts: MapperOptions = {}): MapResult {
  const views = new Map<string, GreedyView>();
  const bytes = new Map(problem.edges.map((e) => [`${e.from}\u0000${e.to}`, e.bytes]));
  return runWave(problem, 'wave-greedy', (task, node, parent) => {
    const cands = candidatesOf(problem, task);
    const pinned = problem.entryNodes?.[task];
    if (node === HOME && pinned && cands.includes(pinned)) return pinned;
    const view = views.get(node) ?? (node === HOME ? { ...viewOf(problem, HOME), links: {} } : viewOf(problem, node));
    const r = chooseNodeGreedy(view, bytes.get(`${parent}\u0000${task}`) ?? 0, cands);
    views.set(node, r.view);
    return r.node;
  });
}
