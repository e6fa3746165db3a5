// Per-item runtime records as CSV, with the original's runtime_tasks.txt columns plus Node.
// Everything in seconds, as the original: time stamps are Unix times with ms precision; elapse
// (finish - enter), duration (finish - execute) and waiting (execute - enter) are durations.
import type { Redis } from 'ioredis';
import { DEFAULT_PREFIX } from '../../config/redis-keys.js';
import { appKeys } from './keys.js';
import { execOrThrow } from './transport.js';
import { pipeline } from './pipeline.js';

export const RUNTIME_CSV_HEADER = 'Task_name,local_input_file,Enter_time,Execute_time,Finish_time,Elapse_time,Duration_time,Waiting_time,Node';

const csvCell = (s: string): string => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);

export async function exportRuntimeCsv(redis: Redis, app: string, prefix: string = DEFAULT_PREFIX): Promise<string> {
  const k = appKeys(prefix, app);
  const items = await redis.zrange(k.items, '0', '-1');
  const lines = [RUNTIME_CSV_HEADER];
  for (let i = 0; i < items.length; i += 500) {
    const batch = items.slice(i, i + 500);
    const recs = (await execOrThrow(batch.reduce((p, id) => p.hgetall(k.rt(id)), pipeline(redis)))) as Array<Record<string, string>>;
    for (const rec of recs) {
      const tasks = [...new Set(Object.keys(rec).map((f) => f.slice(0, f.lastIndexOf('|'))))];
      const rows = tasks
        .map((t) => ({ t, enter: Number(rec[`${t}|enter`]), start: Number(rec[`${t}|start`]), finish: Number(rec[`${t}|finish`]) }))
        .filter((r) => Number.isFinite(r.start) && Number.isFinite(r.finish))
        .sort((a, b) => a.start - b.start);
      for (const r of rows) {
        const enter = Number.isFinite(r.enter) ? r.enter : r.start;
        lines.push([
          csvCell(r.t), csvCell(rec[`${r.t}|file`] ?? ''), (enter / 1000).toFixed(3), (r.start / 1000).toFixed(3), (r.finish / 1000).toFixed(3),
          ((r.finish - enter) / 1000).toFixed(3), ((r.finish - r.start) / 1000).toFixed(3), ((r.start - enter) / 1000).toFixed(3),
          csvCell(rec[`${r.t}|node`] ?? ''),
        ].join(','));
      }
    }
  }
  return `${lines.join('\n')}\n`;
}
