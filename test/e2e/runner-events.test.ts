// The telemetry statistics fed with the event sequences the real task runners write (see
// circe/runner/task-runner.ts): a join gets one `enter` per arriving input and one `start`; a
// successful attempt commits enter+start+finish together; a failed attempt writes only `fail`.
// Found by the live e2e test: counting entered − started left phantom waiting items at joins.
import { expect } from 'chai';
import type { AppEvent, TaskEvent } from '../../config/events.js';
import { AppStats } from '../../orchestrator/telemetry/stats.js';

const base = { app: 'a', node: 'n1', ts: 1 };
const ev = (type: TaskEvent['type'], task: string, item: string, extra: Partial<TaskEvent> = {}): AppEvent => ({ ...base, type, task, item, ...extra });
const committed = (task: string, item: string): AppEvent[] => [ev('enter', task, item), ev('start', task, item), ev('finish', task, item, { durationMs: 5 })];

describe('telemetry statistics with the runners\' real event sequences', () => {
  it('counts a 3-input join as one waiting item until it runs, then none', () => {
    const s = new AppStats('a');
    s.add(ev('enter', 'join', 'i1'));
    s.add(ev('enter', 'join', 'i1'));
    expect(s.snapshot().tasks.join).to.include({ waiting: 1, running: 0 });
    for (const e of committed('join', 'i1')) s.add(e);
    expect(s.snapshot().tasks.join).to.include({ waiting: 0, running: 0, processed: 1, entered: 3, started: 1 });
    expect(s.snapshot().queued).to.equal(0);
  });

  it('counts a retried attempt (a fail without a start) as waiting, and nothing once it succeeds', () => {
    const s = new AppStats('a');
    s.add(ev('fail', 't', 'i1', { attempt: 1, final: false, error: 'x' }));
    expect(s.snapshot().tasks.t).to.include({ waiting: 1, running: 0, failedAttempts: 1, failed: 0 });
    for (const e of committed('t', 'i1')) s.add(e);
    expect(s.snapshot().tasks.t).to.include({ waiting: 0, running: 0, processed: 1 });
  });

  it('forgets a join\'s partial inputs once the item is given up elsewhere', () => {
    const s = new AppStats('a');
    for (const e of committed('left', 'i1')) s.add(e);
    s.add(ev('enter', 'join', 'i1'));
    s.add(ev('fail', 'right', 'i1', { attempt: 3, final: true, error: 'boom' }));
    expect(s.snapshot().tasks.join).to.include({ waiting: 1 });
    s.add({ type: 'item-done', app: 'a', item: 'i1', makespanMs: 10, outputs: [], ts: 2 });
    expect(s.snapshot().tasks.join).to.include({ waiting: 0, running: 0 });
    expect(s.snapshot()).to.include({ itemsDone: 1, itemsFailed: 1, queued: 0, running: 0 });
  });
});
