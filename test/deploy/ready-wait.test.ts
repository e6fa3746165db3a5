// deploy's wait for the runners: a slow start that keeps advancing is waited for past the budget,
// a stalled one fails naming the runners that never came.
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { waitReady } from '../../orchestrator/deploy/pipeline.js';

/** A Redis whose ready hash gains one task every `everyMs`, up to `upTo` tasks. */
function fakeRedis(tasks: string[], everyMs: number, upTo = tasks.length): Redis {
  const t0 = Date.now();
  return { hkeys: async () => tasks.slice(0, Math.min(upTo, Math.floor((Date.now() - t0) / everyMs))) } as unknown as Redis;
}

describe('deploy: waiting for the runners to be ready', () => {
  const tasks = Array.from({ length: 14 }, (_, i) => `task${i}`);

  it('waits past the budget while runners keep becoming ready, reporting each step', async () => {
    const seen: number[] = [];
    const t0 = Date.now();
    await waitReady(fakeRedis(tasks, 20), 'k', tasks, { timeoutMs: 100, stallMs: 60, pollMs: 5 }, (n) => seen.push(n));
    expect(Date.now() - t0).to.be.greaterThan(250);
    expect(seen[seen.length - 1]).to.equal(14);
    expect(seen).to.deep.equal([...seen].sort((a, b) => a - b));
  });

  it('fails once no runner became ready for the stall time, naming the missing ones', async () => {
    const err = await waitReady(fakeRedis(tasks, 10, 3), 'k', tasks, { timeoutMs: 100, stallMs: 60, pollMs: 5 }, () => undefined).then(() => undefined, (e: Error) => e);
    expect(err?.message).to.match(/^runner\(s\) of task3, task4, task5, task6, task7, task8, task9, task10, task11, task12 and 1 more did not start within \d+ s \(3 of 14 ready\)$/);
  });
});
