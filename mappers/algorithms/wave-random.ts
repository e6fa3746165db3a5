// WAVE random: every placement is uniform over the nodes that can run the task. Each task has its
// own random stream rngFor(seed, task), so the result does not depend on the order in which
// controllers act (the distributed version on node agents gets the same mapping).
import type { Problem } from '../problem.js';
import type { MapResult, MapperOptions } from '../result.js';
import { rngFor } from '../prng.js';
import { candidatesOf, chooseNodeRandom } from '../wave.js';
import { runWave } from './wave-run.js';

export function waveRandom(problem: Problem, opts: MapperOptions = {}): MapResult {
  const seed = opts.seed ?? 1;
  return runWave(problem, 'wave-random', (task) => chooseNodeRandom(rngFor(seed, task), candidatesOf(problem, task)));
}
