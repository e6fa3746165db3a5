// fusion: the join of the three detectors (NUM_INPUTS 3). Checks that every shard of the job arrived
// and that no flow was lost on the way, merges the findings per source and writes the job's report,
// which goes back to the home.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { inputPaths } from './flowlib.mjs';

export async function task(inputs, pathin, pathout) {
  const parts = await Promise.all(inputPaths(inputs, pathin).map(async (f) => JSON.parse(await readFile(f, 'utf8'))));
  const { job, source, shards, total, rejected } = parts[0];
  const seen = parts.map((p) => p.shard).sort((a, b) => a - b);
  if (parts.some((p) => p.job !== job)) throw new Error(`fusion got shards of different jobs: ${parts.map((p) => p.job).join(', ')}`);
  if (seen.length !== shards || seen.some((s, i) => s !== i)) throw new Error(`${job}: expected shards 0..${shards - 1}, got ${seen.join(', ')}`);
  const flows = parts.reduce((n, p) => n + p.flows, 0);
  if (flows !== total) throw new Error(`${job}: shards hold ${flows} flows, the split produced ${total}`);

  const anomalies = parts.flatMap((p) => p.anomalies.map((a) => ({ ...a, shard: p.shard })))
    .sort((a, b) => a.type.localeCompare(b.type) || a.src_ip.localeCompare(b.src_ip) || b.score - a.score);
  const byType = {};
  for (const a of anomalies) byType[a.type] = (byType[a.type] ?? 0) + 1;
  const report = {
    job,
    source,
    flows,
    rejected,
    sources: parts.reduce((n, p) => n + p.sources, 0),
    shards: seen,
    verdict: anomalies.length ? 'anomalous' : 'clean',
    byType,
    suspects: [...new Set(anomalies.map((a) => a.src_ip))].sort(),
    anomalies,
  };
  await mkdir(pathout, { recursive: true });
  const out = join(pathout, `${job}_fusion_report.json`);
  await writeFile(out, JSON.stringify(report, null, 2) + '\n');
  return [out];
}
