// What the example apps' outputs must hold, derived independently of the runtime:
// - dummy: every task records `task<-parents` lineage, so the sink's files of one input are
//   implied by the DAG alone (joins wait for every parent; FLAG true fans one output out to every
//   child, FLAG false sends output i to child i and names it after that child);
// - anomaly: apps/anomaly/expected.json lists the planted anomalies per input file.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { HOME, type AppSpec } from '../../config/types.js';

/** Jupiter's job id: the name before the first `_`, else before the first `.`. */
export function jobOf(name: string): string {
  const b = basename(name);
  return b.includes('_') ? b.slice(0, b.indexOf('_')) : b.split('.')[0]!;
}

export interface DummyRecord {
  job: string;
  task: string;
  to: string;
  sources: string[];
  lineage: string[];
}

function parents(app: AppSpec, task: string): string[] {
  return (app.graph.predecessors(task) ?? []).sort();
}

function lineage(app: AppSpec, task: string, memo = new Map<string, Set<string>>()): Set<string> {
  const hit = memo.get(task);
  if (hit) return hit;
  const ps = parents(app, task);
  const out = new Set([`${task}<-${ps.length ? ps.join(',') : HOME}`]);
  for (const p of ps) for (const l of lineage(app, p, memo)) out.add(l);
  memo.set(task, out);
  return out;
}

/** Output file name -> record, for one input file of the dummy app (or any app built like it). */
export function expectedDummyOutputs(app: AppSpec, inputFile: string, job = jobOf(inputFile)): Map<string, DummyRecord> {
  const source = `${basename(inputFile)}:${createHash('sha256').update(readFileSync(inputFile)).digest('hex').slice(0, 16)}`;
  const out = new Map<string, DummyRecord>();
  for (const s of app.sinkTasks) {
    const spec = app.tasks.find((t) => t.name === s)!;
    const to = spec.broadcast ? 'all' : HOME;
    out.set(`${job}_${s}_${to}`, { job, task: s, to, sources: [source], lineage: [...lineage(app, s)].sort() });
  }
  return out;
}

export interface AnomalyExpectation {
  flows: number;
  anomalies: Array<{ type: string; src_ip: string }>;
}

export function anomalyExpected(appDir: string): Record<string, AnomalyExpectation> {
  return JSON.parse(readFileSync(join(appDir, 'expected.json'), 'utf8')) as Record<string, AnomalyExpectation>;
}

export interface AnomalyReport {
  job: string;
  flows: number;
  verdict: string;
  suspects: string[];
  shards: number[];
  anomalies: Array<{ type: string; src_ip: string }>;
}

/** The report's findings as a comparable summary: flows, verdict, distinct (type, source) pairs. */
export function reportSummary(r: Pick<AnomalyReport, 'flows' | 'anomalies'>): { flows: number; verdict: string; findings: string[] } {
  const findings = [...new Set(r.anomalies.map((a) => `${a.type} from ${a.src_ip}`))].sort();
  return { flows: r.flows, verdict: findings.length ? 'anomalous' : 'clean', findings };
}
