// npm run bench:pipeline — a 3-stage linear pipeline of no-op JavaScript tasks through the
// process runtime, beside a raw BullMQ chain of 3 queues with the same payloads and
// redis-benchmark's round trip, all on the same private Redis, in the same run.
//   throughput: N items submitted at once (open loop), items/s from first submit to last done
//   per-hop latency: items sent one at a time (closed loop), next stage's start - previous
//   stage's finish (ours: from the runtime records; raw: processor start - add time)
// The machine is shared, so every variant runs BENCH_ROUNDS times, interleaved, and the report
// gives medians; the ratio is the median of the per-round ratios (raw and ours measured side by
// side). CPU per item is read from /proc for each process (and from Redis' INFO), which shows
// where the time goes independently of how busy the machine is.
// Environment: BENCH_ITEMS (10000), BENCH_LATENCY_ITEMS (300), BENCH_ROUNDS (3),
// BENCH_CONCURRENCY (runner concurrency; default: the pipeline default), BENCH_ONLY=ours,
// BENCH_TASK=python (the no-op tasks in Python, through the persistent Python worker),
// BENCH_PROFILE=<dir> (CPU profiles of the runners), BENCH_RESULTS=<file> (JSON, default
// bench/results/pipeline.json).
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RedisServer } from '../../orchestrator/stack/redis-server.js';
import { Ours, type Run } from './jupiter.js';
import { cpuLine, log, median, medianCpu, redisBenchmark } from './measure.js';
import { RawInProcess, RawProcesses } from './raw-chain.js';

const N = Number(process.env.BENCH_ITEMS ?? 10_000);
const LAT_N = Number(process.env.BENCH_LATENCY_ITEMS ?? 300);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));
const ONLY_OURS = process.env.BENCH_ONLY === 'ours';
const PYTHON = process.env.BENCH_TASK === 'python';
const PAYLOAD = Buffer.alloc(100, 'p');
const PREFIX = 'bench:';
const here = dirname(fileURLToPath(import.meta.url));

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'jupiter-bench-'));
  const server = await new RedisServer({ dir: join(root, 'redis') }).start();
  const redisPid = (): number | undefined => server.pid;
  const raw = ONLY_OURS ? undefined : new RawInProcess(server.url, redisPid, PAYLOAD.toString());
  const rawProc = ONLY_OURS ? undefined : new RawProcesses(server.url, redisPid, PAYLOAD.toString());
  const c = process.env.BENCH_CONCURRENCY;
  const ours = new Ours(server.url, root, redisPid, { python: PYTHON, payload: PAYLOAD, files: ROUNDS * (N + LAT_N), prefix: PREFIX, concurrency: c ? Number(c) : undefined });
  const rounds: Array<{ raw?: Run; rawProc?: Run; ours: Run; ratio: number; ratioProc: number }> = [];
  try {
    const rb = redisBenchmark(server.port);
    await raw?.start();
    await rawProc?.start();
    await ours.start();
    for (let r = 1; r <= ROUNDS; r++) {
      log(`round ${r}/${ROUNDS}: raw BullMQ in one process, raw BullMQ one process per stage, Jupiter (${N} items each) ...`);
      const a = await raw?.throughput(N);
      const b = await rawProc?.throughput(N);
      const c = await ours.throughput(N);
      rounds.push({ raw: a, rawProc: b, ours: c, ratio: c.throughput / (a?.throughput ?? NaN), ratioProc: c.throughput / (b?.throughput ?? NaN) });
      log(`  raw ${a?.throughput.toFixed(0) ?? '-'}/s, raw per process ${b?.throughput.toFixed(0) ?? '-'}/s, Jupiter ${c.throughput.toFixed(0)}/s (load ${loadavg()[0]!.toFixed(1)})`);
      log(`  Jupiter CPU µs/item: ${cpuLine(c.cpu)}; Redis per item: ${c.redis!.scripts.toFixed(1)} scripts (${c.redis!.scriptUs.toFixed(0)} µs), ${c.redis!.commands.toFixed(0)} commands (${c.redis!.top})`);
    }
    log(`latency: ${LAT_N} items one at a time ...`);
    const rawLat = (await raw?.latency(LAT_N)) ?? { p50: NaN, p99: NaN };
    const ourLat = await ours.latency(LAT_N);

    const tp = (k: 'raw' | 'rawProc' | 'ours'): number => median(rounds.map((x) => x[k]?.throughput ?? NaN));
    const ratio = median(rounds.map((x) => x.ratio));
    const ratioProc = median(rounds.map((x) => x.ratioProc));
    const f = (x: number, d = 2): string => x.toFixed(d);
    const ourRuns = rounds.map((x) => x.ours);
    console.log(`\nbench:pipeline  (${N} items, 100-byte payload, 3 stages, one Redis on loopback; medians of ${ROUNDS} rounds; runner concurrency ${ours.concurrency}; ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(1)})`);
    console.log(`  redis-benchmark PING, 1 client   ${f(rb.rps, 0)} req/s, round trip p50 ${f(rb.p50Ms, 3)} ms`);
    console.log(`  raw BullMQ chain                 ${f(tp('raw'), 0)} items/s, hop p50 ${f(rawLat.p50)} ms, p99 ${f(rawLat.p99)} ms (in-process)`);
    console.log(`  raw BullMQ, process per stage    ${f(tp('rawProc'), 0)} items/s`);
    console.log(`  ${`Jupiter (process runtime${PYTHON ? ', Python' : ''})`.padEnd(32)} ${f(tp('ours'), 0)} items/s, hop p50 ${f(ourLat.p50)} ms, p99 ${f(ourLat.p99)} ms`);
    console.log(`  throughput ratio Jupiter/raw     ${f(ratio)}  (per round: ${rounds.map((x) => f(x.ratio)).join(', ')}; target >= 0.50: ${ratio >= 0.5 ? 'met' : 'NOT met'})`);
    console.log(`  ratio Jupiter/raw process-per-stage ${f(ratioProc)}`);
    console.log(`  hop p50 Jupiter/raw              ${f(ourLat.p50 / rawLat.p50)}x;  = ${f(ourLat.p50 / rb.p50Ms, 0)} Redis round trips  (target p50 < 2 ms: ${ourLat.p50 < 2 ? 'met' : 'NOT met'})`);
    console.log(`  CPU µs per item, Jupiter         ${cpuLine(medianCpu(ourRuns))}`);
    if (raw) console.log(`  CPU µs per item, raw in-process  ${cpuLine(medianCpu(rounds.map((x) => x.raw!)))}`);
    if (rawProc) console.log(`  CPU µs per item, raw per process ${cpuLine(medianCpu(rounds.map((x) => x.rawProc!)))}`);
    const rs = ourRuns[ourRuns.length - 1]!.redis!;
    const rr = rounds[rounds.length - 1]?.raw?.redis;
    console.log(`  Redis per item, Jupiter          ${f(rs.scripts, 1)} scripts taking ${f(rs.scriptUs, 0)} µs, ${f(rs.commands, 0)} commands` + (rr ? `; raw: ${f(rr.scripts, 1)} scripts taking ${f(rr.scriptUs, 0)} µs, ${f(rr.commands, 0)} commands` : ''));
    const out = process.env.BENCH_RESULTS ?? join(here, '..', '..', '..', 'bench', 'results', PYTHON ? 'pipeline-python.json' : 'pipeline.json');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify({
      bench: 'pipeline', task: PYTHON ? 'python' : 'javascript', at: new Date().toISOString(), items: N, latencyItems: LAT_N, rounds: ROUNDS, payloadBytes: PAYLOAD.length,
      concurrency: ours.concurrency, cpus: cpus().length, loadavg: loadavg(), node: process.version,
      redisBenchmark: rb,
      median: { rawItemsPerSec: tp('raw'), rawProcessItemsPerSec: tp('rawProc'), oursItemsPerSec: tp('ours'), ratio, ratioProcess: ratioProc },
      hop: { raw: rawLat, ours: ourLat },
      cpuUsPerItem: { ours: medianCpu(ourRuns), raw: raw ? medianCpu(rounds.map((x) => x.raw!)) : null, rawProcess: rawProc ? medianCpu(rounds.map((x) => x.rawProc!)) : null },
      perRound: rounds,
    }, null, 2)}\n`);
    log(`results: ${out}`);
  } finally {
    await raw?.stop().catch(() => undefined);
    await rawProc?.stop().catch(() => undefined);
    await ours.stop().catch(() => undefined);
    await server.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
