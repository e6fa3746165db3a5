// `npm run bench:mappers`: mapper quality and speed on a seeded grid.
// Options: --instances N (HEFT-paper grid, default 80), --fog N (fog grid, default 24),
// --budget MS (best's local-search budget, default 500), --seed S, --out DIR.
// Prints a table and writes bench/results/mappers.json and mappers.svg.
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { table as newTable } from '../../orchestrator/report/table.js';
import type { MapResult, Mapper, MapperOptions, Problem } from '../../mappers/index.js';
import { checkSchedule, createRng, fogInstance, heftPaperInstance, mappers, simulate } from '../../mappers/index.js';
import { cpMinLowerBound, serialTime } from './metrics.js';
import { barChartSvg } from './svg.js';

interface Args { instances: number; fog: number; budget: number; seed: number; out: string }

function parseArgs(argv: string[]): Args {
  const a: Args = { instances: 80, fog: 24, budget: 500, seed: 2002, out: 'bench/results' };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[i + 1];
    if (k === '--instances') a.instances = Number(v);
    else if (k === '--fog') a.fog = Number(v);
    else if (k === '--budget') a.budget = Number(v);
    else if (k === '--seed') a.seed = Number(v);
    else if (k === '--out') a.out = String(v);
    else continue;
    i++;
  }
  return a;
}

const pick = <T>(rng: ReturnType<typeof createRng>, xs: readonly T[]): T => xs[rng.int(xs.length)] as T;

interface Instance { grid: 'heft-paper' | 'fog'; label: string; problem: Problem }

function instances(args: Args): Instance[] {
  const rng = createRng(args.seed);
  const out: Instance[] = [];
  for (let i = 0; i < args.instances; i++) {
    const v = pick(rng, [20, 40, 60, 80, 100]);
    const p = {
      v,
      ccr: pick(rng, [0.1, 0.5, 1, 5, 10]),
      alpha: pick(rng, [0.5, 1, 2]),
      outDegree: pick(rng, [1, 2, 3, 4, 5, v]),
      beta: pick(rng, [0.1, 0.25, 0.5, 0.75, 1]),
      procs: pick(rng, [4, 8]),
      seed: rng.int(2 ** 31),
    };
    out.push({ grid: 'heft-paper', label: `#${i} v${p.v} ccr${p.ccr} a${p.alpha} d${p.outDegree} b${p.beta} p${p.procs}`, problem: heftPaperInstance(p) });
  }
  for (let i = 0; i < args.fog; i++) {
    const p = {
      v: pick(rng, [10, 20, 40]),
      alpha: pick(rng, [0.5, 1, 2]),
      outDegree: pick(rng, [1, 2, 3]),
      edge: pick(rng, [4, 8, 16]),
      fog: pick(rng, [2, 4]),
      cloud: 1,
      meanBytes: pick(rng, [1e5, 1e6, 1e7]),
      seed: rng.int(2 ** 31),
    };
    out.push({ grid: 'fog', label: `#${args.instances + i} fog v${p.v} e${p.edge} f${p.fog} ${p.meanBytes}B`, problem: fogInstance(p) });
  }
  return out;
}

interface Row { instance: string; grid: string; mapper: string; makespan: number; slr: number; speedup: number; ratio: number; ms: number }

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

function timeHeftLarge(): { ms: number; tasks: number; edges: number; nodes: number; makespan: number; baselineMs: number } {
  const problem = heftPaperInstance({ v: 1000, ccr: 1, alpha: 1, outDegree: 9, beta: 0.5, procs: 64, seed: 7 });
  const heft = mappers.heft as NonNullable<typeof mappers.heft>;
  const times: number[] = [];
  let r: MapResult | undefined;
  for (let i = 0; i < 7; i++) {
    const copy = { ...problem }; // a fresh object: compile() is not cached, so indexing is timed too
    const t0 = performance.now();
    r = heft(copy);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  // Baseline in the same process: one simulation of the same mapping (a linear pass over the DAG).
  const base: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    simulate(problem, (r as MapResult).mapping);
    base.push(performance.now() - t0);
  }
  base.sort((a, b) => a - b);
  return { ms: times[3] as number, tasks: problem.tasks.length, edges: problem.edges.length, nodes: problem.nodes.length, makespan: (r as MapResult).makespan, baselineMs: base[3] as number };
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const list = instances(args);
  // 'best-nocopy' = best with allowDuplicates false (what a runtime that never runs copies gets).
  const entries: Array<[string, Mapper, MapperOptions]> = [
    ...Object.entries(mappers).map(([n, f]) => [n, f, {}] as [string, Mapper, MapperOptions]),
    ['best-nocopy', mappers.best as Mapper, { allowDuplicates: false }],
  ];
  const names = entries.map(([n]) => n);
  const rows: Row[] = [];
  const invalid: string[] = [];
  list.forEach((inst, i) => {
    process.stderr.write(`\r[${i + 1}/${list.length}] ${inst.label}                    `);
    const lb = cpMinLowerBound(inst.problem);
    const serial = serialTime(inst.problem);
    const res: Array<{ mapper: string; r: MapResult; ms: number }> = [];
    for (const [name, fn, extra] of entries) {
      const t0 = performance.now();
      const r = fn(inst.problem, { seed: args.seed + i, budgetMs: args.budget, ...extra });
      const ms = performance.now() - t0;
      const check = checkSchedule(inst.problem, r);
      if (!check.ok) invalid.push(`${name} on ${inst.label}: ${check.errors[0]}`);
      res.push({ mapper: name, r, ms });
    }
    const min = Math.min(...res.map((x) => x.r.makespan));
    for (const x of res) {
      rows.push({ instance: inst.label, grid: inst.grid, mapper: x.mapper, makespan: x.r.makespan, slr: x.r.makespan / lb, speedup: serial / x.r.makespan, ratio: x.r.makespan / min, ms: x.ms });
    }
  });
  process.stderr.write('\n');

  const summary = (grid: string) => names.map((mapper) => {
    const rs = rows.filter((r) => r.mapper === mapper && (grid === 'all' || r.grid === grid));
    return {
      mapper,
      meanSlr: mean(rs.map((r) => r.slr)),
      worstSlr: Math.max(...rs.map((r) => r.slr)),
      meanSpeedup: mean(rs.map((r) => r.speedup)),
      meanRatio: mean(rs.map((r) => r.ratio)),
      worstRatio: Math.max(...rs.map((r) => r.ratio)),
      meanMs: mean(rs.map((r) => r.ms)),
      meanMakespan: mean(rs.map((r) => r.makespan)),
    };
  });
  const byGrid = { 'heft-paper': summary('heft-paper'), fog: summary('fog') };
  for (const [grid, s] of Object.entries(byGrid)) {
    const t = newTable([`${grid} (${rows.filter((r) => r.grid === grid).length / names.length} inst.)`, 'mean SLR', 'worst SLR', 'mean speedup', 'mean ratio to best', 'worst ratio', 'mean ms']);
    for (const x of s) t.push([x.mapper, x.meanSlr.toFixed(3), x.worstSlr.toFixed(3), x.meanSpeedup.toFixed(3), x.meanRatio.toFixed(4), x.worstRatio.toFixed(3), x.meanMs.toFixed(2)]);
    console.log(t.toString());
  }

  // best vs HEFT: mean of per-instance makespan ratios on the HEFT-paper grid.
  const hp = list.filter((x) => x.grid === 'heft-paper').map((x) => x.label);
  const gainOver = (name: string): number => (1 - mean(hp.map((label) => {
    const b = rows.find((r) => r.instance === label && r.mapper === name) as Row;
    const h = rows.find((r) => r.instance === label && r.mapper === 'heft') as Row;
    return b.makespan / h.makespan;
  }))) * 100;
  const gain = gainOver('best');
  const gainNoCopy = gainOver('best-nocopy');
  const worse = Object.keys(mappers).filter((n) => n !== 'best').some((n) => rows.some((r) => r.mapper === 'best' && r.makespan > (rows.find((x) => x.instance === r.instance && x.mapper === n) as Row).makespan + 1e-9));
  console.log(`best vs heft on the HEFT-paper grid: mean makespan ${gain.toFixed(2)}% below HEFT (target >= 3%); best-nocopy ${gainNoCopy.toFixed(2)}% below${worse ? '  !! best worse than some mapper somewhere' : ''}`);

  const large = timeHeftLarge();
  console.log(`heft on ${large.tasks} tasks x ${large.nodes} nodes (${large.edges} edges): ${large.ms.toFixed(1)} ms median of 7 (target < 250 ms); ` +
    `${(large.ms / large.baselineMs).toFixed(1)}x one simulation of its mapping (${large.baselineMs.toFixed(1)} ms)`);
  if (invalid.length) console.log(`INVALID schedules:\n  ${invalid.slice(0, 10).join('\n  ')}`);

  const outDir = resolve(args.out);
  mkdirSync(outDir, { recursive: true });
  const json = { args, generatedAt: new Date().toISOString(), summary: byGrid, bestVsHeftPercent: gain, bestNoCopyVsHeftPercent: gainNoCopy, heftLarge: large, invalid, rows };
  writeFileSync(resolve(outDir, 'mappers.json'), JSON.stringify(json, null, 2));
  writeFileSync(resolve(outDir, 'mappers.svg'), barChartSvg(
    'Mean makespan ratio to the best mapper per instance (lower is better)',
    names,
    [
      { label: 'HEFT-paper grid', values: byGrid['heft-paper'].map((x) => x.meanRatio) },
      { label: 'fog grid', values: byGrid.fog.map((x) => x.meanRatio) },
    ],
  ));
  console.log(`wrote ${resolve(outDir, 'mappers.json')} and mappers.svg`);
  if (invalid.length) process.exitCode = 1;
}

main();
