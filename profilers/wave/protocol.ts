// Distributed WAVE through Redis, shared by the home (orchestrator) and the agents.
//   <wave(app)><run>:spec     string  WaveRunSpec JSON (TTL)
//   <wave(app)><run>:mapping  hash    task -> node, written by whoever placed the task (TTL)
//   agent:<node>:inbox        list    {type: 'wave-assign', id: run, app, task}: "you hold task"
//   reply:<run>               list    {task, node, by} after every placement (the home waits on it)
// The control relation and the order in which tasks are handed out depend only on the DAG, so
// every participant computes them alike (mappers/wave.ts). A node places the children of the
// tasks it holds in that order, each choice from its own view, which makes the distributed
// result equal to the pure simulation for the same profiles and seed.
import type { Keys } from '../../config/redis-keys.js';
import { HOME } from '../../config/types.js';
import type { ControlRelation } from '../../mappers/wave.js';

export type WaveMapper = 'wave-greedy' | 'wave-random';
export const WAVE_MAPPERS: readonly WaveMapper[] = ['wave-greedy', 'wave-random'];

export interface WaveRunSpec {
  run: string;
  app: string;
  appDir: string;
  mapper: WaveMapper;
  seed: number;
  /** Compute nodes taking part, in problem order. */
  nodes: string[];
  createdAt: number;
  timeoutMs: number;
}

export interface WavePlacement {
  task: string;
  node: string;
  /** Node that chose (`home` for entry tasks). */
  by: string;
}

export const WAVE_TTL_SEC = 600;

export function waveKeys(keys: Keys, app: string, run: string): { spec: string; mapping: string } {
  const base = `${keys.wave(app)}${run}:`;
  return { spec: `${base}spec`, mapping: `${base}mapping` };
}

/** Position of every task in the hand-out order (entry tasks first, then breadth-first over control). */
export function waveOrder(rel: ControlRelation): Map<string, number> {
  const order: string[] = [...(rel.controls[HOME] ?? [])];
  for (let i = 0; i < order.length; i++) {
    for (const c of rel.controls[order[i]!] ?? []) if (!order.includes(c)) order.push(c);
  }
  return new Map(order.map((t, i) => [t, i]));
}
