// node dist/bench/peers/breakdown.js — where an isolated item's milliseconds go in Jupiter's
// 3-stage pipeline of no-op tasks (bench:peers' Jupiter part): items one at a time, each split
// into segments from the timestamps the pipeline records anyway (item record, runtime records)
// and the stamps written inside the task functions. Medians over the items, in ms.
// Environment: BENCH_LATENCY_ITEMS (200), BENCH_TASK=python|javascript (python),
// BENCH_DATA_PATH=central|direct (central), BENCH_PAYLOAD_BYTES (100).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { Ours } from '../pipeline/jupiter.js';
import { log, median } from '../pipeline/measure.js';

const LAT_N = Number(process.env.BENCH_LATENCY_ITEMS ?? 200);
const PYTHON = (process.env.BENCH_TASK ?? 'python') === 'python';
const DATA_PATH = (process.env.BENCH_DATA_PATH ?? 'central') as 'central' | 'direct';
const PAYLOAD = Number(process.env.BENCH_PAYLOAD_BYTES ?? 100);

/** Stamps (input name -> [start s, end s] per stage in order) written inside the task functions. */
function readStamps(dir: string): Map<string, Array<[number, number]>> {
  const out = new Map<string, Array<[number, number]>>();
  for (const f of readdirSync(dir)) {
    for (const line of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const [k, a, b] = line.split(' ');
      if (!k || a === undefined || b === undefined) continue;
      const list = out.get(k) ?? [];
      list.push([Number(a) * 1000, Number(b) * 1000]);
      out.set(k, list);
    }
  }
  for (const l of out.values()) l.sort((x, y) => x[0] - y[0]);
  return out;
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'jbreak-'));
  const stampDir = join(root, 'stamps');
  mkdirSync(stampDir);
  process.env.BENCH_STAMPS_DIR = stampDir;
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const ours = new Ours(server.url, root, () => server.pid, { python: PYTHON, payload: Buffer.alloc(PAYLOAD, 'p'), files: LAT_N + 20, prefix: 'b:', dataPath: DATA_PATH });
  try {
    await ours.start();
    await ours.closedLoop(20); // warm
    const { result: { items, keys }, cpuMs, redis } = await ours.cpuDuring(LAT_N, () => ours.closedLoop(LAT_N));
    const recs = await ours.records(items.map((i) => i.item));
    const stamps = readStamps(stampDir);
    const seg = new Map<string, number[]>();
    const add = (name: string, v: number): void => {
      if (!Number.isFinite(v)) return;
      seg.set(name, [...(seg.get(name) ?? []), v]);
    };
    items.forEach((it, i) => {
      const { item, rt } = recs[i]!;
      const st = stamps.get(keys[i]!) ?? [];
      const entered = Number(item.enteredAt);
      add('client: submit call -> item entered (source reads, checks)', entered - it.t0);
      let prev = entered;
      for (const [j, t] of ['s1', 's2', 's3'].entries()) {
        const start = Number(rt[`${t}|start`]);
        const finish = Number(rt[`${t}|finish`]);
        add(`${t}: previous -> runner starts the task (queue, pickup, input)`, start - prev);
        if (st[j]) {
          add(`${t}: runner start -> task function starts (invoke)`, st[j]![0] - start);
          add(`${t}: task function`, st[j]![1] - st[j]![0]);
          add(`${t}: task function returns -> runner has outputs`, finish - st[j]![1]);
        } else {
          add(`${t}: task run (runner)`, finish - start);
        }
        prev = finish;
      }
      const last = Number(item.lastOutputAt);
      add('sink: s3 finished -> output written and counted (commit, queue, look, write)', last - prev);
      add('client: item done -> client returns (event, blocking read)', it.end - Number(item.doneAt));
      add('client: submit call returns (after item entered)', it.submitted - entered);
      add('end-to-end', it.end - it.t0);
    });
    console.log(`\nwhere an isolated item's time goes (Jupiter, ${PYTHON ? 'Python' : 'JavaScript'} tasks, ${DATA_PATH} path; medians of ${LAT_N} items, ms; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})\n`);
    for (const [name, xs] of seg) console.log(`  ${median(xs).toFixed(3).padStart(8)}  ${name}`);
    // On a VM where each socket write and each wake-up of an idle process costs ~0.1-0.5 ms of
    // CPU, an isolated item's latency follows the CPU all processes spend on it (2 cores).
    const total = Object.values(cpuMs).reduce((a, b) => a + b, 0);
    console.log(`\nCPU per isolated item, ms (all processes; ${total.toFixed(2)} in all, against an end-to-end p50 of ${median(seg.get('end-to-end') ?? []).toFixed(2)} ms):`);
    for (const [name, ms] of Object.entries(cpuMs).sort((a, b) => b[1] - a[1])) console.log(`  ${ms.toFixed(3).padStart(8)}  ${name}`);
    console.log(`Redis per item: ${redis.scripts.toFixed(1)} scripts (${(redis.scriptUs / 1000).toFixed(2)} ms), ${redis.commands.toFixed(1)} commands inside and outside them (${redis.top})`);
  } finally {
    await ours.stop().catch((e: Error) => log(`stop: ${e.message}`));
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
