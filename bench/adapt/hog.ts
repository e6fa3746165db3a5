// npm run bench:adapt (third part) — issue 13's CPU hog, as root, on the embedded default through
// the real CLI and the real hub:
//   stack     the embedded default (Redis, hub, three local node agents), process runtime; the
//             hub's adapt loop in mode auto (threshold 20%, hold BENCH_HOLD_SEC = 5 s), from
//             jupiter.config.json
//   app       a chain t0 -> t1 -> t2 of JavaScript tasks; t1 burns a fixed amount of CPU per item
//             (SHA-256 over 18 MiB, ~40 ms on an idle core), t0 and t2 only copy
//   stream    items closed-loop with BENCH_WINDOW (4) in flight, all the time; after 5 s the
//             one-shot execution profiles are taken again under the stream (`jupiter profile exec
//             --fresh --serial`): the local nodes share the machine, and profiles of an idle
//             machine would make the live model of t1's node look slow by the stream's own load
//   hog       after BENCH_BEFORE_SEC (20 s) the node t1 runs on gets loaded: its runners go into a
//             cgroup (v1 cpu controller) limited to half a core, with two busy-loop processes
//             (the hog) beside them. All local nodes share the machine's cores, so the cgroup is
//             what makes one node slower than the others; a runner that later starts on that
//             node joins it too
//   measured  when the online execution model of t1 on that node (profilers/models, from the
//             runtime records) predicts twice its time before the hog; when the plan's predicted
//             gain (orchestrator/adapt/plan.ts, the same evaluation as the hub's) first passes
//             the threshold; when the hub moved tasks (its remap events: a cheap task left on
//             the loaded node may follow later, when its own gain passes the threshold); items/s
//             before, under the hog before the first move, and in the last 15 s of the stream
//             (BENCH_AFTER_SEC = 75 s after the hog); sent/delivered/lost/duplicates.
// Writes bench/results/adapt-hog.json and .svg (throughput and makespan over time, marked).
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import { DEFAULT_PREFIX, redisKeys } from '../../config/redis-keys.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { appKeys } from '../../circe/queue/keys.js';
import { planRemap, remapMapper } from '../../orchestrator/adapt/plan.js';
import { keepRecords, readExecRecords } from '../../orchestrator/adapt/records.js';
import type { RemapEvent } from '../../orchestrator/adapt/events.js';
import { readMapping } from '../../orchestrator/deploy/record.js';
import { readProfiles } from '../../orchestrator/profiles/read.js';
import { renderTable } from '../../orchestrator/report/table.js';
import { fitExecModels, predictExec, type ExecRecord } from '../../profilers/models/exec-model.js';
import { jupiter, log, repoRoot, sleep, writeResults } from '../cli.js';
import { BIN_SEC, bins, Stream } from './stream.js';
import { timelineSvg } from './timeline-svg.js';

const num = (v: string | undefined, d: number): number => (v && Number(v) > 0 ? Number(v) : d);
const WINDOW = num(process.env.BENCH_WINDOW, 4);
const BEFORE_SEC = num(process.env.BENCH_BEFORE_SEC, 20);
const AFTER_SEC = num(process.env.BENCH_AFTER_SEC, 75);
const HOLD_SEC = num(process.env.BENCH_HOLD_SEC, 5);
const THRESHOLD = 0.2;
const SETTLED_SEC = 15;
/** The hog's cgroup: this share of one core for the node's runners and the hog together. */
const QUOTA_CORES = 0.5;
const HOGS = 2;
const APP = 'hogchain';
const CGROUP_ROOT = '/sys/fs/cgroup/cpu';
const RESULTS = resolve(process.env.BENCH_RESULTS ?? join(repoRoot, 'bench', 'results', 'adapt-hog.json'));
/** The CLI sees only this bench's configuration (a developer's JUPITER_* must not leak in). */
const ENV = Object.fromEntries(['JUPITER_CONFIG', 'JUPITER_REDIS_URL', 'JUPITER_MQTT_URL', 'JUPITER_MAPPER', 'JUPITER_RUNTIME'].map((k) => [k, '']));

function writeApp(parent: string): string {
  const dir = join(parent, APP);
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  writeFileSync(join(dir, 'configuration.txt'), '3\nt0 1 false t1\nt1 1 false t2\nt2 1 false home\n');
  const task = (t: string, burn: boolean) => [
    `// ${t}: ${burn ? 'a fixed amount of CPU work (SHA-256 over 18 MiB), then ' : ''}copies its input.`,
    "import { createHash } from 'node:crypto';",
    "import { readFile, writeFile } from 'node:fs/promises';",
    "import { join } from 'node:path';",
    'const block = Buffer.alloc(64 * 1024, 7);',
    'export async function task(inputs, pathin, pathout) {',
    '  const [name] = inputs;',
    '  const body = await readFile(join(pathin, name));',
    burn ? "  const h = createHash('sha256');\n  for (let i = 0; i < 288; i++) h.update(block);\n  h.digest();" : '',
    `  const out = join(pathout, name.split(/[_.]/)[0] + '_${t}.txt');`,
    '  await writeFile(out, body);',
    '  return [out];',
    '}',
    '',
  ].filter((l) => l !== '').join('\n');
  for (const t of ['t0', 't1', 't2']) writeFileSync(join(dir, 'scripts', `${t}.mjs`), task(t, t === 't1'));
  writeFileSync(join(dir, 'scripts', 'config.json'), `${JSON.stringify({ taskname_map: { t0: ['t0', true], t1: ['t1', true], t2: ['t2', true] }, exec_profiler: { t0: true, t1: true, t2: true } }, null, 2)}\n`);
  writeFileSync(join(dir, 'sample_input', '0s.txt'), 'sample\n');
  return dir;
}

/** Runner pids of the app on one node (process runtime state files under the stack's state dir). */
function runnerPids(stateDir: string, node: string): number[] {
  const dir = join(stateDir, 'apps', APP);
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((f) => f.endsWith('.json')).flatMap((f) => {
    try {
      const s = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { node?: string; runnerPid?: number | null };
      return s.node === node && s.runnerPid ? [s.runnerPid] : [];
    } catch {
      return [];
    }
  });
}

/** Whatever of this bench's stack still runs after the teardown (it failed, say): runners, agents, hub, Redis. */
function killLeftovers(stateDir: string): void {
  const pids: number[] = [];
  const dir = join(stateDir, 'apps', APP);
  for (const f of existsSync(dir) ? readdirSync(dir).filter((x) => x.endsWith('.json')) : []) {
    try {
      const st = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { supervisorPid?: number; runnerPid?: number | null };
      pids.push(st.supervisorPid ?? 0, st.runnerPid ?? 0);
    } catch {
      // half-written state: nothing to kill from it
    }
  }
  try {
    const st = JSON.parse(readFileSync(join(stateDir, 'stack.json'), 'utf8')) as { redis?: { pid: number }; hub?: { pid: number }; agents?: Record<string, { pid: number }> };
    pids.push(...Object.values(st.agents ?? {}).map((a) => a.pid), st.hub?.pid ?? 0, st.redis?.pid ?? 0);
  } catch {
    // no stack state
  }
  for (const pid of pids.filter((p) => p > 0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/** A node loaded by a hog: a cpu cgroup holding the node's runners and HOGS busy loops. */
class Hog {
  private readonly dir = join(CGROUP_ROOT, `jupiter-hog-${process.pid}`);
  private readonly hogs: ChildProcess[] = [];
  private watcher?: NodeJS.Timeout;
  readonly confined = new Set<number>();

  static support(): string | undefined {
    if (process.getuid?.() !== 0) return 'needs root (cgroups)';
    if (!existsSync(join(CGROUP_ROOT, 'cpu.cfs_quota_us'))) return `no cgroup v1 cpu controller at ${CGROUP_ROOT}`;
    return undefined;
  }

  start(stateDir: string, node: string): void {
    mkdirSync(this.dir);
    writeFileSync(join(this.dir, 'cpu.cfs_period_us'), '100000');
    writeFileSync(join(this.dir, 'cpu.cfs_quota_us'), String(Math.round(QUOTA_CORES * 100000)));
    for (let i = 0; i < HOGS; i++) {
      const c = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
      this.hogs.push(c);
      this.confine(c.pid!);
    }
    const sweep = () => {
      for (const pid of runnerPids(stateDir, node)) if (!this.confined.has(pid)) this.confine(pid);
    };
    sweep();
    this.watcher = setInterval(sweep, 500);
  }

  private confine(pid: number): void {
    try {
      writeFileSync(join(this.dir, 'cgroup.procs'), String(pid));
      this.confined.add(pid);
    } catch {
      // the process is gone already
    }
  }

  async stop(): Promise<void> {
    clearInterval(this.watcher);
    for (const c of this.hogs) c.kill('SIGKILL');
    // Whatever still runs in the cgroup goes back to the root group, then the group goes.
    if (!existsSync(this.dir)) return;
    for (const pid of readFileSync(join(this.dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
      try {
        writeFileSync(join(CGROUP_ROOT, 'cgroup.procs'), pid);
      } catch {
        // gone
      }
    }
    await sleep(200);
    try {
      rmdirSync(this.dir);
    } catch (e) {
      log(`cgroup ${this.dir} not removed: ${(e as Error).message}`);
    }
  }
}

async function main(): Promise<void> {
  const why = Hog.support();
  if (why) {
    log(`bench:adapt hog: skipped (${why})`);
    return;
  }
  const work = mkdtempSync(join(tmpdir(), 'jadapt-hog-'));
  const stateDir = join(work, '.jupiter');
  writeFileSync(join(work, 'jupiter.config.json'), `${JSON.stringify({ adapt: { mode: 'auto', threshold: THRESHOLD, holdSec: HOLD_SEC } }, null, 2)}\n`);
  const out: Record<string, unknown> = { at: new Date().toISOString(), window: WINDOW, holdSec: HOLD_SEC, threshold: THRESHOLD, quotaCores: QUOTA_CORES, hogs: HOGS };
  const hog = new Hog();
  let redis: Redis | undefined;
  try {
    const appDir = writeApp(join(work, 'apps'));
    log(`deploying ${APP} on the embedded default (process runtime; the hub's adapt loop in mode auto)`);
    const dep = JSON.parse(await jupiter(work, ['deploy', appDir, '--runtime', 'process', '--wait', '--json'], ENV)) as { deployment: { outputDir: string; runId: string } };
    const stack = JSON.parse(readFileSync(join(stateDir, 'stack.json'), 'utf8')) as { redis: { url: string } };
    redis = connectRedis(stack.redis.url);
    const app = await loadApp(appDir);
    const first = (await readMapping(redis, DEFAULT_PREFIX, APP))!;
    log(`  mapped ${Object.entries(first.mapping).map(([k, v]) => `${k}@${v}`).join(', ')}`);
    out.deployed = first.mapping;

    const stream = new Stream(redis, app, dep.deployment.runId, join(work, 'items'), WINDOW, (i) => ({ name: `h${i}.txt`, content: `h${i}\n` })).start();
    const progress = setInterval(() => log(`  ${stream.done.length} items done, ${stream.rate(Math.max(0, stream.elapsed - BIN_SEC), stream.elapsed).toFixed(2)} items/s lately`), 10_000);
    // The one-shot execution profiles again, now, under the stream: every local node shares the
    // machine, so profiles taken on an idle machine make the live model of t1's node look slow
    // by the stream's own load, and the hub would move t1 before any hog for that alone.
    await sleep(5000);
    log('execution profiles again under the stream (jupiter profile exec --fresh --serial)');
    await jupiter(work, ['profile', 'exec', appDir, '--fresh', '--serial'], ENV);
    await sleep(Math.max(0, BEFORE_SEC - stream.elapsed) * 1000);

    // The hog loads the node t1 runs on now (a re-map before the hog, from live models that
    // differ from the one-shot profile, would have moved it already: counted apart).
    const atHog = (await readMapping(redis, DEFAULT_PREFIX, APP))!;
    const node = atHog.mapping.t1!;
    const earlier = (await redis.lrange(redisKeys(DEFAULT_PREFIX).remaps(APP), 0, -1)).filter((e) => (JSON.parse(e) as RemapEvent).kind === 'remap').length;
    out.before = atHog.mapping;
    out.remapsBeforeHog = earlier;
    // The model before the hog: what "shifted" is measured against.
    // Records kept between reads as the hub keeps them (records.ts keepRecords).
    let records: ExecRecord[] = [];
    const readRecords = async (): Promise<ExecRecord[]> => (records = keepRecords(records, await readExecRecords(redis!, APP, { prefix: DEFAULT_PREFIX }), { now: Date.now() }));
    const modelSec = async (): Promise<number | undefined> => {
      const m = fitExecModels(await readRecords()).find((x) => x.task === 't1' && x.node === node);
      return m && predictExec(m, m.meanInBytes);
    };
    const gainNow = async (): Promise<number> => {
      const current = await readMapping(redis!, DEFAULT_PREFIX, APP);
      if (!current) return NaN;
      return planRemap({ app, snapshot: await readProfiles(redis!, { prefix: DEFAULT_PREFIX }), records, current, mapper: remapMapper(current, 'heft') }).gain;
    };
    const baseline = (await modelSec())!;
    out.gainBeforeHog = await gainNow();
    const hogAt = stream.elapsed;
    log(`hog on ${node}: its runners and ${HOGS} busy loops in a cgroup of ${QUOTA_CORES} core (t1's model there: ${(baseline * 1000).toFixed(0)} ms)`);
    hog.start(stateDir, node);
    let shiftedAt: number | undefined;
    let gainAt: number | undefined;
    let movedAt: number | undefined;
    const moves: Array<{ t: number; event: RemapEvent }> = [];
    const models: Array<{ t: number; ms: number; gain: number }> = [];
    const end = hogAt + AFTER_SEC;
    while (stream.elapsed < end) {
      const t = stream.elapsed;
      const sec = await modelSec();
      const gain = await gainNow();
      models.push({ t, ms: (sec ?? NaN) * 1000, gain });
      if (shiftedAt === undefined && sec !== undefined && sec >= 2 * baseline) {
        shiftedAt = t;
        log(`  t1's model on ${node} shifted x${(sec / baseline).toFixed(1)} (${(sec * 1000).toFixed(0)} ms) ${(t - hogAt).toFixed(1)} s after the hog`);
      }
      if (gainAt === undefined && gain > THRESHOLD) {
        gainAt = t;
        log(`  predicted gain ${(gain * 100).toFixed(0)}% passes the threshold ${(t - hogAt).toFixed(1)} s after the hog`);
      }
      // Newest first: the re-maps after those before the hog are the oldest beyond them.
      const remaps = (await redis.lrange(redisKeys(DEFAULT_PREFIX).remaps(APP), 0, -1)).map((e) => JSON.parse(e) as RemapEvent).filter((e) => e.kind === 'remap').reverse().slice(earlier);
      for (const ev of remaps.slice(moves.length)) {
        const at = t - (Date.now() - ev.ts) / 1000;
        moves.push({ t: at, event: ev });
        log(`  the hub re-mapped ${(at - hogAt).toFixed(1)} s after the hog: ${ev.moves.map((m) => `${m.task} ${m.from}->${m.to}`).join(', ')}`);
      }
      movedAt = moves[0]?.t;
      await sleep(1000);
    }
    clearInterval(progress);
    await stream.stop();
    const total = stream.elapsed;
    await hog.stop();

    const afterMapping = (await readMapping(redis, DEFAULT_PREFIX, APP))!.mapping;
    const outputs = readdirSync(dep.deployment.outputDir, { recursive: true }).map((f) => String(f).split('/').pop()!).filter((f) => /^h\d+_t2\.txt$/.test(f));
    const stats = await redis.hgetall(appKeys(DEFAULT_PREFIX, APP).stats);
    const sink = { sent: stream.sent.length, delivered: stream.done.length, failed: stream.failed, lost: stream.sent.length - stream.done.length, outputFiles: outputs.length, distinctOutputs: new Set(outputs).size, sinkDelivered: Number(stats.delivered ?? 0) };
    const line = `sent ${sink.sent}, delivered ${sink.delivered}, lost ${sink.lost}${sink.failed ? ` (${sink.failed} failed)` : ''}, output files ${sink.outputFiles}`;
    log(line);
    const beforeRate = stream.rate(hogAt - 15, hogAt);
    const duringRate = movedAt === undefined ? stream.rate(hogAt, total) : stream.rate(hogAt, movedAt);
    // Once the re-maps settled: the last SETTLED_SEC of the stream.
    const afterRate = movedAt === undefined ? NaN : stream.rate(total - SETTLED_SEC, total);
    const timeline = bins(stream.done, total);
    const after = (t: number | undefined) => (t === undefined ? null : t - hogAt);
    Object.assign(out, {
      node,
      hogAtSec: hogAt,
      baselineModelMs: baseline * 1000,
      modelShiftedAfterSec: after(shiftedAt),
      gainAboveThresholdAfterSec: after(gainAt),
      remappedAfterSec: after(movedAt),
      after: afterMapping,
      remaps: moves.map((m) => ({ afterSec: m.t - hogAt, moves: m.event.moves, gain: m.event.gain })),
      itemsPerSec: { before: beforeRate, duringHog: duringRate, afterMove: afterRate },
      sink,
      models,
      timeline,
    });
    const s = (t: number | undefined) => (t === undefined ? 'never' : `${(t - hogAt).toFixed(1)} s`);
    const ok = (b: boolean): string => (b ? 'met' : 'NOT met');
    const table = renderTable(['measure', 'value', 'target', ''], [
      ['hog', `${HOGS} busy loops + ${node}'s runners in ${QUOTA_CORES} core at ${hogAt.toFixed(0)} s`, '', ''],
      [`t1's model on ${node} x2 (${(baseline * 1000).toFixed(0)} ms before)`, s(shiftedAt), '<= 60 s', ok(shiftedAt !== undefined && shiftedAt - hogAt <= 60)],
      [`predicted gain > ${THRESHOLD * 100}% (${((out.gainBeforeHog as number) * 100).toFixed(0)}% before the hog)`, s(gainAt), '', ''],
      [`re-mapped by the hub (hold ${HOLD_SEC} s)`, movedAt === undefined ? 'never' : moves.map((m) => `${s(m.t)}: ${m.event.moves.map((x) => `${x.task} ${x.from}->${x.to}`).join(', ')}`).join('; '), 'after the gain passed', ok(movedAt !== undefined && gainAt !== undefined && movedAt >= gainAt)],
      [`items/s before / hog, before the move / last ${SETTLED_SEC} s`, `${beforeRate.toFixed(2)} / ${duringRate.toFixed(2)} / ${afterRate.toFixed(2)}`, '', ''],
      ['the stream', line, 'lost 0, no duplicate', ok(sink.lost === 0 && sink.outputFiles === sink.distinctOutputs && sink.outputFiles === sink.delivered)],
    ]);
    out.table = table;
    process.stdout.write(`${table}\n`);
    const markers = [{ t: hogAt, label: 'CPU hog' }];
    if (shiftedAt !== undefined) markers.push({ t: shiftedAt, label: 'model x2' });
    for (const m of moves) markers.push({ t: m.t, label: `re-mapped ${m.event.moves.map((x) => x.task).join(',')}` });
    const svg = timelineSvg(`CPU hog on ${node} (${HOGS} busy loops, ${QUOTA_CORES} core): t1's model, throughput and makespan`, [
      { label: `items/s (per ${BIN_SEC} s)`, series: [{ label: 'throughput', points: timeline.map((b) => [b.t, b.itemsPerSec]) }] },
      { label: 'ms', series: [{ label: 'makespan p50', points: timeline.map((b) => [b.t, b.makespanP50Ms]) }, { label: `t1@${node} model`, points: models.map((m) => [m.t, m.ms]) }] },
    ], markers);
    writeResults(RESULTS, out, svg);
  } finally {
    await hog.stop().catch(() => undefined);
    redis?.disconnect();
    log('teardown');
    await jupiter(work, ['teardown', APP, '--stack'], ENV).catch((e: Error) => log(`teardown failed: ${e.message.split('\n')[0]}`));
    killLeftovers(stateDir);
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench:adapt hog failed: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
