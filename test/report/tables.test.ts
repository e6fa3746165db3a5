// The items table after `deploy --wait` / `submit --wait`: short runs list every item; a long run
// lists its problems first, at most MAX_ITEM_ROWS rows, and sums up the rest in one line.
import { expect } from 'chai';
import type { ItemResult } from '../../circe/home/wait.js';
import { itemsTable, MAX_ITEM_ROWS } from '../../orchestrator/report/tables.js';

const item = (i: number, extra: Partial<ItemResult> = {}): ItemResult => ({ item: `${i}x`, done: true, failed: false, makespanMs: i, outputs: [`${i}x_out`], ...extra });
const rows = (t: string): string[] => t.split('\n').filter((l) => /^│ \S/.test(l) && !l.includes('makespan (ms)'));

describe('report: items table', () => {
  it('lists every item of a short run', () => {
    const t = itemsTable([item(1), item(2, { failed: true, error: 'boom' }), item(3, { done: false, makespanMs: undefined })], 'a');
    expect(rows(t)).to.have.length(3);
    expect(t).to.include('failed: boom').and.include('in flight');
    expect(t).to.not.include('more not shown');
  });

  it('shows a long run\'s failed and unfinished items first, then a summary line', () => {
    const results = Array.from({ length: 1000 }, (_, i) => item(i + 1));
    results[700] = item(701, { failed: true, error: 'bad input', done: true });
    results[900] = item(901, { done: false, makespanMs: undefined });
    results[950] = item(951, { trimmed: true, makespanMs: undefined, outputs: [] });
    const t = itemsTable(results, 'app1');
    const r = rows(t);
    expect(r).to.have.length(MAX_ITEM_ROWS);
    expect(r[0]).to.include('701x').and.include('failed: bad input');
    expect(r[1]).to.include('901x').and.include('in flight');
    expect(t).to.include(`${1000 - MAX_ITEM_ROWS} more not shown; 1000 items: 998 done, 1 failed, 1 in flight`);
    expect(t).to.match(/makespan p50 \d+ ms, p95 \d+ ms, max 1000 ms/);
    expect(t).to.include('jupiter status app1 --csv');
  });
});
