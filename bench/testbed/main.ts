// npm run bench:testbed — `jupiter testbed` at 8 and 16 hosts (mesh-N: every pair 50 Mbit/s),
// through the real CLI, as root:
//   up        `testbed up mesh-N` wall time (network, engines, images, stack, agents' heartbeats)
//   profile   from the first agent's start to a complete profile (every directed pair fitted)
//   deploy    `deploy <10-task chain> --runtime docker --wait` wall time
//   memory    resident memory per host: its dockerd, containerd, shims and containers (agent;
//             then agent + runners after the deploy)
//   down      `testbed down` wall time
// Baselines, same run: the profile against its ideal, the bytes the agents must send before every
// pair has a fit ((N-1) peers x the three largest probe sizes) at the shaped rate; each size's
// numbers against the 8-host run (growth with N). Environment: BENCH_HOSTS ("8,16").
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectRedis } from '../../circe/queue/connection.js';
import { isComplete, readProfileView } from '../../orchestrator/profiles/read.js';
import { renderTable } from '../../orchestrator/report/table.js';
import { TESTBED_PROFILER } from '../../orchestrator/testbed/cluster-config.js';
import { MESH_UPLINK } from '../../orchestrator/testbed/presets.js';
import { parseRate } from '../../config/testbed/topology.js';
import type { TestbedState } from '../../orchestrator/testbed/state.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const cli = join(repo, 'bin', 'jupiter.js');
const SIZES = (process.env.BENCH_HOSTS ?? '8,16').split(',').map(Number);
const TASKS = 10;
const log = (m: string): void => {
  process.stderr.write(`${m}\n`);
};

function jupiter(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ ms: number; stdout: string }> {
  const t0 = performance.now();
  return new Promise((res, rej) => {
    const c = spawn(process.execPath, [cli, ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (d: Buffer) => (out += d.toString()));
    c.stderr.on('data', (d: Buffer) => {
      err += d.toString();
      process.stderr.write(`    ${d.toString().trimEnd().split('\n').join('\n    ')}\n`);
    });
    c.on('exit', (code) => (code === 0 ? res({ ms: performance.now() - t0, stdout: out }) : rej(new Error(`jupiter ${args.join(' ')} exited ${code}\n${out}\n${err}`))));
  });
}

/** A chain t0 -> ... -> t9 -> home of JavaScript tasks copying their input (one 100 KB sample). */
function chainApp(parent: string): string {
  const dir = join(parent, 'chain10');
  mkdirSync(join(dir, 'scripts'), { recursive: true });
  mkdirSync(join(dir, 'sample_input'), { recursive: true });
  const names = Array.from({ length: TASKS }, (_, i) => `t${i}`);
  writeFileSync(join(dir, 'configuration.txt'), `${TASKS}\n${names.map((n, i) => `${n} 1 true ${names[i + 1] ?? 'home'}`).join('\n')}\n`);
  writeFileSync(join(dir, 'scripts', 'config.json'), JSON.stringify({
    taskname_map: Object.fromEntries(names.map((n) => [n, [n, true]])),
    exec_profiler: Object.fromEntries(names.map((n) => [n, true])),
  }, null, 2));
  for (const n of names) {
    writeFileSync(join(dir, 'scripts', `${n}.mjs`), `import { copyFileSync } from 'node:fs';\nimport { join, basename } from 'node:path';
export function task(inputs, pathin, pathout) {\n  const out = join(pathout, basename(inputs[0]).replace(/\\.txt$/, '') + '_${n}.txt');\n  copyFileSync(join(pathin, inputs[0]), out);\n  return [out];\n}\n`);
  }
  writeFileSync(join(dir, 'sample_input', '1.txt'), 'x'.repeat(100_000));
  return dir;
}

/** Resident kB of a process tree per root. */
function rssTree(roots: number[]): number {
  const children = new Map<number, number[]>();
  const rss = new Map<number, number>();
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(f[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(p)]);
      rss.set(Number(p), Number(f[21]) * 4);
    } catch {
      // gone
    }
  }
  const seen = new Set<number>();
  const walk = (p: number): void => {
    if (seen.has(p)) return;
    seen.add(p);
    for (const c of children.get(p) ?? []) walk(c);
  };
  roots.forEach(walk);
  return [...seen].reduce((s, p) => s + (rss.get(p) ?? 0), 0);
}

/** Mean MB per host: every process whose command line names the host's /run folder, with its descendants. */
function memoryPerHostMb(state: TestbedState): number {
  const hosts = state.hosts.filter((h) => h.engine);
  const cmd = new Map<number, string>();
  for (const p of readdirSync('/proc').filter((x) => /^\d+$/.test(x))) {
    try {
      cmd.set(Number(p), readFileSync(`/proc/${p}/cmdline`, 'utf8'));
    } catch {
      // gone
    }
  }
  const total = hosts.reduce((s, h) => s + rssTree([...cmd].filter(([, c]) => c.includes(`${state.runRoot}/${h.name}/`)).map(([p]) => p)), 0);
  return total / hosts.length / 1024;
}

interface Result {
  hosts: number;
  upMs: number;
  upParts: string;
  profileMs: number;
  profileIdealMs: number;
  deployMs: number;
  deployError?: string;
  memAgentMb: number;
  memDeployedMb: number;
  downMs: number;
}

async function runOne(n: number, work: string): Promise<Result> {
  const cwd = mkdtempSync(join(work, `mesh${n}-`));
  log(`== mesh-${n}`);
  const up = await jupiter(cwd, ['testbed', 'up', `mesh-${n}`, '--dir', 'tb']);
  const state = JSON.parse(readFileSync(join(cwd, 'tb', 'testbed.json'), 'utf8')) as TestbedState;
  const env = { JUPITER_CONFIG: state.configFile };
  try {
    const nodes = state.hosts.slice(1).map((h) => h.name);
    const redis = connectRedis(state.redis!.url);
    let profileMs = 0;
    try {
      for (;;) {
        const v = await readProfileView(redis);
        if (v.agents.length === nodes.length && isComplete(v.snapshot, nodes)) {
          profileMs = Date.now() - Math.min(...v.agents.map((a) => a.startedAt));
          break;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      redis.disconnect();
    }
    // Largest three sizes first (the bootstrap's order): then every pair has three sizes to fit.
    const first3 = [...TESTBED_PROFILER.probeSizesKb].sort((a, b) => b - a).slice(0, 3).reduce((s, k) => s + k * 1024, 0);
    const profileIdealMs = ((n - 1) * first3 * 8 / parseRate(MESH_UPLINK)!) * 1000;
    const memAgentMb = memoryPerHostMb(state);
    const app = chainApp(cwd);
    // A deploy that fails (runners not ready within deploy's 60 s on an overloaded machine) is
    // recorded as such; the other numbers of this size still count.
    let deployMs = NaN;
    let deployError: string | undefined;
    try {
      deployMs = (await jupiter(cwd, ['deploy', app, '--runtime', 'docker', '--wait', '--timeout', '600'], env)).ms;
    } catch (e) {
      deployError = ((e as Error).message.split('\n').find((l) => l.startsWith('jupiter: ')) ?? (e as Error).message.split('\n')[0])!;
    }
    const memDeployedMb = memoryPerHostMb(state);
    const upParts = /\(([^)]*network[^)]*)\)/.exec(up.stdout)?.[1] ?? '';
    const down = await jupiter(cwd, ['testbed', 'down', '--dir', 'tb']);
    return { hosts: n, upMs: up.ms, upParts, profileMs, profileIdealMs, deployMs, ...(deployError ? { deployError } : {}), memAgentMb, memDeployedMb, downMs: down.ms };
  } catch (e) {
    await jupiter(cwd, ['testbed', 'down', '--dir', 'tb']).catch(() => undefined);
    throw e;
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('bench:testbed needs root (namespaces, engines)');
  const work = mkdtempSync(join(tmpdir(), 'jtb-bench-'));
  const load = loadavg()[0]!;
  const results: Result[] = [];
  try {
    for (const n of SIZES) {
      results.push(await runOne(n, work));
      // After every size: a later failure keeps what was measured.
      save(results, load);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const base = results[0]!;
  const s = (ms: number) => (ms / 1000).toFixed(1);
  const head = ['hosts', 'up (s)', 'complete profile (s)', 'ideal (s)', 'profile / ideal', 'deploy 10 tasks (s)', 'MB/host (agent)', 'MB/host (deployed)', 'down (s)', `vs ${base.hosts} hosts (up, profile, deploy)`];
  const rows = results.map((r) => [r.hosts, s(r.upMs), s(r.profileMs), s(r.profileIdealMs), (r.profileMs / r.profileIdealMs).toFixed(2), s(r.deployMs), r.memAgentMb.toFixed(0), r.memDeployedMb.toFixed(0), s(r.downMs),
      `${(r.upMs / base.upMs).toFixed(2)}, ${(r.profileMs / base.profileMs).toFixed(2)}, ${(r.deployMs / base.deployMs).toFixed(2)}`]);
  process.stdout.write(`${renderTable(head, rows)}\nmesh-N at ${MESH_UPLINK} per pair; probe sizes ${TESTBED_PROFILER.probeSizesKb.join(',')} KB; ${cpus().length} CPUs, load ${load.toFixed(1)} at start\n`);
  for (const r of results) process.stdout.write(`  ${r.hosts} hosts: up = ${r.upParts}\n`);
  for (const r of results) if (r.deployError) process.stdout.write(`  ${r.hosts} hosts: deploy failed: ${r.deployError}\n`);
  log(`results: ${save(results, load)}`);
}

function save(results: Result[], load: number): string {
  const out = process.env.BENCH_RESULTS ?? join(repo, 'bench', 'results', 'testbed.json');
  writeFileSync(out, `${JSON.stringify({ at: new Date().toISOString(), cpus: cpus().length, load1AtStart: load, uplink: MESH_UPLINK, profiler: TESTBED_PROFILER, results }, null, 2)}\n`);
  return out;
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
