// Tables people read after deploy and in `status`: placement, per-item makespans, task counters.
import type { MappingRecord } from '../../config/events.js';
import type { ItemResult } from '../../circe/home/wait.js';
import type { AppStatus } from '../../circe/queue/status.js';
import { renderTable, type Cell } from './table.js';

export function placementTable(rec: MappingRecord): string {
  const slots = new Map(rec.schedule.map((s) => [s.task, s]));
  const rows: Cell[][] = Object.entries(rec.mapping).map(([task, node]) => {
    const s = slots.get(task);
    return [task, node, s ? s.start.toFixed(3) : '-', s ? s.finish.toFixed(3) : 'helper'];
  });
  return `${renderTable(['task', 'node', 'predicted start (s)', 'predicted finish (s)'], rows)}\nmapper ${rec.mapper}, predicted makespan ${rec.predictedMakespan.toFixed(3)} s`;
}

/** Rows an items table shows at most: a long run gets its problems first and a summary line. */
export const MAX_ITEM_ROWS = 20;

function itemState(r: ItemResult): string {
  if (r.failed) return `failed: ${r.error ?? ''}`.slice(0, 60);
  if (r.trimmed) return 'done (records trimmed)';
  return r.done ? 'done' : 'in flight';
}

export function itemsTable(results: ItemResult[], app?: string): string {
  // Failed and unfinished items first (they are what a long list would hide), then in order.
  const shown = results.length <= MAX_ITEM_ROWS ? results
    : [...results.filter((r) => r.failed || !r.done), ...results.filter((r) => !r.failed && r.done)].slice(0, MAX_ITEM_ROWS);
  const table = renderTable(['item', 'state', 'makespan (ms)', 'outputs'], shown.map((r) => [
    r.item, itemState(r), r.makespanMs?.toFixed(0) ?? '-', r.outputs.join(' ').slice(0, 70),
  ]));
  if (shown.length === results.length) return table;
  const failed = results.filter((r) => r.failed).length;
  const open = results.filter((r) => !r.done).length;
  const spans = results.flatMap((r) => (r.makespanMs === undefined ? [] : [r.makespanMs])).sort((a, b) => a - b);
  const pct = (p: number): string => (spans.length ? `${spans[Math.min(spans.length - 1, Math.ceil((p / 100) * spans.length) - 1)]!.toFixed(0)} ms` : '-');
  return [
    table,
    `${results.length - shown.length} more not shown; ${results.length} items: ${results.length - failed - open} done, ${failed} failed, ${open} in flight; ` +
      `makespan p50 ${pct(50)}, p95 ${pct(95)}, max ${pct(100)}`,
    `every item's runtimes: jupiter status ${app ?? '<app>'} --csv`,
  ].join('\n');
}

const ms = (v: number | undefined) => (v === undefined ? '-' : `${v.toFixed(0)} ms`);

export function statusTable(st: AppStatus, rec?: MappingRecord): string {
  const rows: Cell[][] = st.tasks.map((s) => [s.task, rec?.mapping[s.task] ?? '-', s.waiting, s.active, s.processed, s.retried, s.failed, s.duplicates]);
  rows.push(['(home sink)', 'home', st.sink.waiting, st.sink.active, st.sink.delivered, '-', st.sink.failed, st.sink.duplicatesSuppressed]);
  const lines = [
    renderTable(['task', 'node', 'waiting', 'active', 'processed', 'retried', 'failed', 'dup. dropped'], rows),
    `items: ${st.items.submitted} submitted, ${st.items.done} done, ${st.items.inFlight} in flight`,
    `makespan: p50 ${ms(st.makespan.p50Ms)}, p95 ${ms(st.makespan.p95Ms)}, mean ${ms(st.makespan.meanMs)} over ${st.makespan.count} item(s)`,
  ];
  if (st.deadLetterCount > 0) {
    lines.push(`${st.deadLetterCount} dead letter(s), newest first:`,
      renderTable(['task', 'item', 'attempts', 'error'], st.deadLetters.map((x) => [x.task, x.item, x.attempts, String(x.error).slice(0, 80)])));
  }
  return lines.join('\n');
}
