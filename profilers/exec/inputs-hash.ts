// What an execution profile depended on, by content (ExecProfile.inputsHash), and the DAG order
// the profiler runs tasks in. Apart from the profiler itself, so that deploy can tell a stale
// profile without loading the invokers.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { AppSpec, TaskSpec } from '../../config/types.js';
import { jobPrefix } from '../../config/app/job.js';

/** DAG tasks parents-first (Kahn), ties in file order. */
export function topoOrder(app: AppSpec): TaskSpec[] {
  const dag = app.tasks.filter((t) => t.isDag);
  const byName = new Map(dag.map((t) => [t.name, t]));
  const indeg = new Map(dag.map((t) => [t.name, 0]));
  for (const t of dag) for (const c of t.children) if (byName.has(c)) indeg.set(c, (indeg.get(c) ?? 0) + 1);
  const order: TaskSpec[] = [];
  const ready = dag.filter((t) => indeg.get(t.name) === 0);
  while (ready.length > 0) {
    const t = ready.shift()!;
    order.push(t);
    for (const c of t.children) {
      if (!byName.has(c)) continue;
      const d = (indeg.get(c) ?? 0) - 1;
      indeg.set(c, d);
      if (d === 0) ready.push(byName.get(c)!);
    }
    ready.sort((p, q) => p.line - q.line);
  }
  return order;
}

/**
 * Each DAG task's inputsHash: its script's content, the other files of its script folder (modules
 * it may import, config.json), NUM_INPUTS, FLAG and children, and its parents' hashes (an entry
 * task: the first sample job's files), so that any change upstream changes it.
 */
export async function inputsHashes(app: AppSpec): Promise<Map<string, string>> {
  const order = topoOrder(app);
  const out = new Map<string, string>();
  const firstJob = app.sampleInputs[0] ? jobPrefix(basename(app.sampleInputs[0])) : undefined;
  const sample = app.sampleInputs.filter((f) => jobPrefix(basename(f)) === firstJob);
  const sampleHash = createHash('sha256');
  for (const f of sample) sampleHash.update(basename(f)).update('\0').update(await readFile(f)).update('\0');
  const sampleDigest = sampleHash.digest('hex');
  const scripts = new Set(order.map((t) => resolve(t.scriptFile)));
  const folders = new Map<string, string>();
  const folderDigest = async (dir: string): Promise<string> => {
    if (!folders.has(dir)) {
      const h = createHash('sha256');
      const names = (await readdir(dir, { withFileTypes: true }).catch(() => [])).filter((e) => e.isFile() && !scripts.has(join(dir, e.name))).map((e) => e.name).sort();
      for (const n of names) h.update(n).update('\0').update(await readFile(join(dir, n)).catch(() => Buffer.alloc(0))).update('\0');
      folders.set(dir, h.digest('hex'));
    }
    return folders.get(dir)!;
  };
  const parents = new Map<string, string[]>();
  for (const t of order) for (const c of t.children) parents.set(c, [...(parents.get(c) ?? []), t.name]);
  for (const t of order) {
    const h = createHash('sha256').update(await readFile(t.scriptFile).catch(() => Buffer.from('(missing)')));
    h.update(await folderDigest(dirname(resolve(t.scriptFile))));
    h.update(JSON.stringify({ n: t.numInputs, flag: t.broadcast, children: t.children, lang: t.language }));
    const ps = parents.get(t.name) ?? [];
    if (ps.length === 0) h.update(sampleDigest);
    for (const p of ps) h.update(out.get(p) ?? '');
    out.set(t.name, h.digest('hex'));
  }
  return out;
}
