// What one task costs the machine on this node's runtime, measured as CPU time through the real
// runner (issue 12): the empty hop and call probes (prober.ts) are idle round trips of ~1-2 ms,
// while a task run by the runtime costs ~10 ms of CPU (BullMQ pickup, the arrive and commit
// scripts, files, the call, the next delivery) in the runner, the Python worker and Redis. On a
// machine whose cores several nodes share (the embedded default), that CPU, not the idle round
// trip, is what a fan-out of tens of tasks queues behind.
// The probe: a one-task scratch app (a no-op Python task whose output goes home), a real
// TaskRunner in this process on a private key prefix, `items` items one after the other; CPU of
// this process + the task's Python worker + the Redis server (INFO cpu) per item. Removed after
// (scratch-run.ts).
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Redis } from 'ioredis';
import { procStat } from '../../circe/runtime/pid.js';
import { median } from './median.js';
import { ProbeRound } from './round.js';
import { withScratchRun } from './scratch-run.js';

export interface TaskCost {
  /** CPU seconds per task (runner + worker + Redis), median of the items after a warm-up. */
  cpuSec: number;
  /** Wall seconds per item (entry to the task's finish), median. */
  wallSec: number;
}

const TASK = 'probe';
const SCRIPT = [
  'import os',
  '',
  '',
  'def task(filename, pathin, pathout):',
  '    out = os.path.join(pathout, "o_probe.txt")',
  '    with open(out, "w") as f:',
  '        f.write("probe\\n")',
  '    return [out]',
  '',
].join('\n');

/** CPU seconds of a process from /proc (0 when gone or not Linux). */
function procCpuSec(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const f = procStat(pid);
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** Redis server CPU seconds (INFO cpu: used_cpu_user + used_cpu_sys). */
async function redisCpuSec(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const get = (k: string): number => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return get('used_cpu_user') + get('used_cpu_sys');
}

/**
 * Run `items` no-op items through a real runner of a scratch task on this node (after two
 * warm-ups). Undefined when this node cannot run a Python task. Its connections and keys are
 * `round`'s (round.ts): abandoning the round ends it.
 */
export async function measureTaskCost(redis: Redis, redisUrl: string, prefix: string, node: string, items: number, round = new ProbeRound()): Promise<TaskCost | undefined> {
  return withScratchRun({
    redis, prefix, node, round, kind: 'taskprobe',
    tasks: [{ name: TASK, children: ['home'], script: SCRIPT }],
    runner: (_task, dir) => ({ redisUrl, workDir: join(dir, 'work') }),
  }, async ({ own, runners, input, submitAndWait }) => {
    const pid = (): number | undefined => runners[0]!.invokerPid;
    const walls: number[] = [];
    // CPU is read over the measured items together: /proc counts in 10 ms ticks.
    let c0 = process.cpuUsage();
    let w0 = 0;
    let r0 = 0;
    for (let i = 0; i < items + 2; i++) {
      if (i === 2) {
        c0 = process.cpuUsage();
        w0 = procCpuSec(pid());
        r0 = await redisCpuSec(own);
      }
      const f = await input(i, `probe item ${i}\n`);
      const t0 = performance.now();
      if (!(await submitAndWait(f, TASK, 2))) return undefined;
      if (i >= 2) walls.push((performance.now() - t0) / 1000);
    }
    const c = process.cpuUsage(c0);
    const cpu = (c.user + c.system) / 1e6 + (procCpuSec(pid()) - w0) + ((await redisCpuSec(own)) - r0);
    return { cpuSec: cpu / items, wallSec: median(walls) };
  });
}
