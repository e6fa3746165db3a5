// Pure parts of telemetry and the dashboard: stream ids, statistics, compat lines, the layout.
import { expect } from 'chai';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { compareIds, streamReply } from '../../orchestrator/telemetry/bridge.js';
import { AppStats, quantile } from '../../orchestrator/telemetry/stats.js';
import { compatMappingLine, compatTaskLine } from '../../orchestrator/telemetry/compat.js';
import { maskUrl } from '../../config/cluster/mask.js';
import { mappingMessage, topics } from '../../orchestrator/telemetry/topics.js';
import { repoRoot } from '../support/paths.js';
import { SEVEN, bigDag, emptyTally, itemEvents, mappingRecord } from '../dashboard/feed.js';

type Layout = (tasks: Array<{ name: string; children: string[] }>, opts?: object) => {
  pos: Map<string, { x: number; y: number; layer: number }>; width: number; height: number; w: number; h: number;
};

describe('telemetry units', () => {
  it('orders Redis stream ids numerically', () => {
    expect(compareIds('1-0', '2-0')).to.be.lessThan(0);
    expect(compareIds('10-0', '9-5')).to.be.greaterThan(0);
    expect(compareIds('1700000000000-12', '1700000000000-3')).to.be.greaterThan(0);
    expect(compareIds('5-1', '5-1')).to.equal(0);
    fc.assert(fc.property(fc.nat(), fc.nat(), fc.nat(100), fc.nat(100), (a, b, s, t) =>
      Math.sign(compareIds(`${a}-${s}`, `${b}-${t}`)) === Math.sign(a !== b ? a - b : s - t)));
  });

  it('reads XREAD replies in RESP2 and RESP3 shapes', () => {
    const entries = [['1-0', ['json', '{}']]];
    expect(streamReply([['k', entries]])).to.deep.equal([['k', entries]]);
    expect(streamReply(['k', entries, 'k2', entries])).to.deep.equal([['k', entries], ['k2', entries]]);
    expect(streamReply(null)).to.equal(null);
  });

  it('computes nearest-rank quantiles', () => {
    expect(quantile([], 0.5)).to.equal(null);
    expect(quantile([1, 2, 3, 4], 0.5)).to.equal(2);
    expect(quantile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.95)).to.equal(10);
    expect(quantile([7], 0.95)).to.equal(7);
  });

  it('counts processed, failed, waiting and running items from events', () => {
    const stats = new AppStats(SEVEN.app, 30);
    const tally = emptyTally(SEVEN.tasks);
    const now = Date.now();
    for (let i = 0; i < 10; i++) {
      for (const ev of itemEvents(SEVEN, `i${i}`, now - 5000 + i * 100, i === 3 ? { retryAt: 'merge' } : i === 4 ? { failAt: 'detect' } : {}, tally)) stats.add(ev);
    }
    // one item caught after the start of decode: ingest done, decode running, detect queued
    const partial = itemEvents(SEVEN, 'p', now, {}, emptyTally(SEVEN.tasks)).slice(0, 5);
    for (const ev of partial) stats.add(ev);
    const s = stats.snapshot(now + 1000);
    expect(s.itemsDone).to.equal(tally.itemsDone).and.to.equal(9);
    expect(s.itemsFailed).to.equal(1);
    expect(s.tasks.merge).to.include({ processed: 9, failed: 0, failedAttempts: 1, waiting: 0, running: 0 });
    expect(s.tasks.detect).to.include({ processed: 9, failed: 1, waiting: 0, running: 0 });
    expect(s.tasks.decode).to.include({ running: 1, waiting: 0 });
    expect(partial.map((e) => e.type)).to.deep.equal(['enter', 'start', 'finish', 'enter', 'start']);
    expect(s.queued).to.equal(0);
    expect(s.running).to.equal(1);
    expect(s.throughput).to.be.closeTo(9 / 30, 1e-9);
    expect(s.makespanP50Sec).to.be.greaterThan(0);
    expect(s.makespanP95Sec).to.be.at.least(s.makespanP50Sec!);
    // items older than the window no longer count towards throughput
    expect(stats.snapshot(now + 60_000).throughput).to.equal(0);
  });

  it('writes the original Jupiter\'s plain-text payloads', () => {
    const base = { app: 'a', task: 'resize', node: 'n1', item: 'x', ts: 1 };
    expect(compatTaskLine({ ...base, type: 'start' })).to.equal('resize starts');
    expect(compatTaskLine({ ...base, type: 'finish' })).to.equal('resize ends');
    expect(compatTaskLine({ ...base, type: 'enter' })).to.equal(undefined);
    const rec = { ...mappingRecord(SEVEN), ts: 1_700_000_000_999 };
    expect(compatMappingLine(rec)).to.equal(`mappings ${Object.entries(SEVEN.mapping).map(([t, n]) => `${t}:${n}:1700000000`).join(' ')}`);
  });

  it('masks passwords in broker URLs', () => {
    expect(maskUrl('mqtt://user:secret@host:1883')).to.equal('mqtt://user:***@host:1883');
    expect(maskUrl('mqtts://host:8883')).to.equal('mqtts://host:8883');
  });

  it('builds topics and mapping payloads (a record without a DAG still lists every task)', () => {
    expect(topics.task('a', 't')).to.equal('jupiter/a/tasks/t');
    expect(topics.node('n')).to.equal('jupiter/nodes/n');
    const { dag: _dag, ...noDag } = mappingRecord(SEVEN);
    expect(mappingMessage(noDag).dag.tasks.map((t) => t.name).sort()).to.deep.equal(Object.keys(SEVEN.mapping).sort());
  });

  it('lays out DAGs in layers: every edge goes right, no two boxes overlap (200 tasks)', async () => {
    const { layeredLayout } = (await import(pathToFileURL(join(repoRoot, 'orchestrator/dashboard/static/layout.js')).href)) as { layeredLayout: Layout };
    for (const dag of [SEVEN, bigDag(200, 8)]) {
      const t0 = performance.now();
      const L = layeredLayout(dag.tasks);
      const ms = performance.now() - t0;
      expect(L.pos.size).to.equal(dag.tasks.length);
      for (const t of dag.tasks) for (const c of t.children) expect(L.pos.get(c)!.layer).to.be.greaterThan(L.pos.get(t.name)!.layer);
      const boxes = [...L.pos.values()];
      for (let i = 0; i < boxes.length; i++) {
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i]!;
          const b = boxes[j]!;
          const overlap = Math.abs(a.x - b.x) < L.w && Math.abs(a.y - b.y) < L.h;
          expect(overlap).to.equal(false);
        }
      }
      if (dag.tasks.length === 200) console.log(`      layout of 200 tasks: ${ms.toFixed(1)} ms, ${L.width}x${L.height.toFixed(0)}`);
    }
  });
});
