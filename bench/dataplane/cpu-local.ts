// node dist/bench/dataplane/cpu-local.js — where the direct data path's CPU per item goes, on this
// machine without a testbed (far cheaper to iterate on than bench:dataplane): apps/camera's
// capture -> detect -> track, each runner in its own process on its own node name (so every
// 1 MiB frame between tasks goes through a producer's store and an HTTP fetch over loopback), the
// sink in this process, a private redis-server. Prints each process's CPU ms per item (from
// /proc, over the closed-loop run only) and items/s.
// Environment: CPU_ITEMS (60), CPU_WINDOW (8), CPU_PROF (a folder: each runner writes a
// --cpu-prof profile there), CPU_PATH (direct | central; default direct), CPU_NODE_ARGS (extra
// node flags for the runners, e.g. --trace-gc).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadApp } from '../../config/app/load.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { configureApp } from '../../circe/queue/settings.js';
import { submitItems } from '../../circe/home/source.js';
import { waitForItems } from '../../circe/home/wait.js';
import { Sink } from '../../circe/home/sink.js';
import { TaskRunner } from '../../circe/runner/task-runner.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..', '..');
const PREFIX = 'cpu:';
const TASKS = ['capture', 'detect', 'track'] as const;
const num = (v: string | undefined, d: number): number => (v && Number(v) > 0 ? Number(v) : d);

function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

/** CPU ms (user + system) a process used so far. */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

async function runner(task: string, node: string, redisUrl: string, work: string): Promise<void> {
  const app = await loadApp(join(repo, 'apps', 'camera'));
  const spec = app.tasks.find((t) => t.name === task)!;
  const r = await TaskRunner.start({ app, task: spec, node, redisUrl, prefix: PREFIX, workDir: join(work, 'w', task), dataDir: join(work, 'store', node) });
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => void r.close().finally(() => process.exit(0)));
}

async function main(): Promise<void> {
  const items = num(process.env.CPU_ITEMS, 60);
  const window = num(process.env.CPU_WINDOW, 8);
  const dataPath = process.env.CPU_PATH === 'central' ? 'central' : 'direct';
  const work = mkdtempSync(join(tmpdir(), 'jupiter-cpu-'));
  const port = await freePort();
  const redisProc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const redisUrl = `redis://127.0.0.1:${port}`;
  const redis = connectRedis(redisUrl);
  const kids: ChildProcess[] = [];
  try {
    for (let i = 0; i < 50 && (await redis.ping().catch(() => '')) !== 'PONG'; i++) await new Promise((r) => setTimeout(r, 100));
    const app = await loadApp(join(repo, 'apps', 'camera'));
    await configureApp(redis, PREFIX, app.name, { dataPath });
    const prof = process.env.CPU_PROF;
    if (prof) mkdirSync(prof, { recursive: true });
    for (const [i, t] of TASKS.entries()) {
      const args = [...(process.env.CPU_NODE_ARGS ?? '').split(' ').filter(Boolean), ...(prof ? ['--cpu-prof', '--cpu-prof-dir', prof, '--cpu-prof-name', `${t}.cpuprofile`] : []), fileURLToPath(import.meta.url), 'runner', t, `node${i + 1}`, redisUrl, work];
      const k = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      kids.push(k);
      await new Promise<void>((res, rej) => {
        k.stdout!.once('data', () => {
          k.stdout!.pipe(process.stderr); // what the runner prints later (--trace-gc)
          res();
        });
        k.once('exit', (c) => rej(new Error(`runner ${t} exited ${c}`)));
      });
    }
    const sink = await Sink.start({ app: app.name, redisUrl, prefix: PREFIX, outputDir: join(work, 'out') });
    const trig = (n: number): string => {
      const p = join(work, 'in', `f${n}.trigger`);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, JSON.stringify({ camera: 'cam0', frame: n, seed: 7 }));
      return p;
    };
    // Warm-up: a few items one at a time (module loads, connections).
    for (let n = 0; n < 3; n++) {
      const [it] = await submitItems(redis, PREFIX, app, [trig(n)], { runId: `warm${n}` });
      await waitForItems(redis, PREFIX, app.name, [it!.item], { timeoutMs: 30_000 });
    }
    const pids = [...kids.map((k) => k.pid!), process.pid, redisProc.pid!];
    const names = [...TASKS, 'sink+home', 'redis'];
    const before = pids.map(cpuMs);
    const t0 = performance.now();
    const mono0 = process.hrtime.bigint() / 1000n;
    let next = 100;
    const end = 100 + items;
    const inflight = new Set<Promise<void>>();
    while (next < end || inflight.size) {
      while (next < end && inflight.size < window) {
        const n = next++;
        const p = (async () => {
          const [it] = await submitItems(redis, PREFIX, app, [trig(n)], { runId: `r${n}` });
          const [res] = await waitForItems(redis, PREFIX, app.name, [it!.item], { timeoutMs: 60_000 });
          if (res?.failed) throw new Error(`item ${n} failed`);
        })();
        const q = p.finally(() => inflight.delete(q));
        inflight.add(q);
      }
      await Promise.race(inflight);
    }
    const sec = (performance.now() - t0) / 1000;
    const mono1 = process.hrtime.bigint() / 1000n;
    const after = pids.map(cpuMs);
    const per = names.map((n, i) => [n, (after[i]! - before[i]!) / items] as const);
    process.stdout.write(`${dataPath}: ${items} items, window ${window}: ${(items / sec).toFixed(1)} items/s\n`);
    process.stdout.write(`CPU ms per item: ${per.map(([n, v]) => `${n} ${v.toFixed(1)}`).join(', ')}; total ${per.reduce((a, [, v]) => a + v, 0).toFixed(1)}\n`);
    // The run's window on the monotonic clock (µs), which --cpu-prof's sample times use too.
    if (process.env.CPU_PROF) process.stdout.write(`profile window: ${mono0} ${mono1}\n`);
    await sink.close();
  } finally {
    for (const k of kids) k.kill('SIGTERM');
    await Promise.all(kids.map((k) => new Promise((r) => (k.exitCode !== null ? r(null) : k.once('exit', r)))));
    await redis.quit().catch(() => undefined);
    redisProc.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'runner') void runner(process.argv[3]!, process.argv[4]!, process.argv[5]!, process.argv[6]!);
else await main();
