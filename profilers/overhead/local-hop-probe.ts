// What a hop between two tasks on this node costs per byte on the direct data path (issue 12).
// The empty hop probe (prober.ts) sends no bytes, and the model charged a same-node hop only that;
// but an output above INLINE_MAX does not ride in its delivery: the producing runner moves its file
// into the node's store (plane.putFile) and records its lineage, the receiver needs the arrive round
// trip, finds the blob in a store on this machine (plane.take) and copies it into its work folder
// (task-runner copyIn). Between two camera tasks on one node (1 MiB frames) 4-9 ms more passed from
// the first one's finish to the next one's start than the model's gap (bench/results/fidelity-quota-fastest-run*.json).
// The probe: a two-task scratch app (`make` writes as many bytes as its input names, `take` ignores
// them and sends a line home), two real TaskRunners in this process on the direct path with their
// store in the scratch folder; items alternate a large payload and a small one (inline); per item
// the gap between make's finish and take's start (runtime records), which holds all of the above
// and none of the tasks' own work. The cost per byte is the fastest large gap less the fastest
// small one, over the difference of the sizes, so the empty hop (priced by the hop probe) cancels.
// The fastest, as the other probes take theirs: the agents of a machine probe at the same moments.
// On the testbed's first round (all seven agents starting at once) the median of the pairs'
// differences gave 0-24 ms per MiB, median 20 ms, where camera's items took 4-9 ms more than the empty hop.
// The same items also give the runners' CPU per byte (this process's CPU per item, large less
// small): the model charges it to a node's CPU quota, which the task probe's tiny items miss.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { configureApp } from '../../circe/queue/settings.js';
import { teardownAppKeys } from '../../circe/queue/teardown.js';
import { appKeys } from '../../circe/queue/keys.js';
import { INLINE_MAX } from '../../circe/queue/naming.js';
import { submitItems } from '../../circe/home/source.js';
import { TaskRunner } from '../../circe/runner/task-runner.js';
import { median } from './median.js';
import { writeScratchApp } from './scratch-app.js';
import { ProbeRound } from './round.js';
import { removeScratch, scratchDir } from './scratch-dir.js';

export interface LocalHopCost {
  /** Seconds per byte a same-node hop takes beyond the empty one (>= 0). */
  secPerByte: number;
  /** Median gap (make's finish -> take's start) of the large and the small items, seconds. */
  bigGapSec: number;
  smallGapSec: number;
  /** The large payload, bytes. */
  bytes: number;
  /**
   * CPU seconds the two runners spent per byte of a task's inputs and outputs beyond a small item's
   * (>= 0): the fastest large item's CPU less the fastest small one's, over twice the sizes'
   * difference (the hop's bytes leave one task and enter the other). This process's CPU: the
   * runners run here, the tasks' Python workers (their own code) are other processes.
   */
  cpuSecPerByte: number;
}

/** The large payload: camera's frame size, the volume the model got most wrong. */
export const LOCAL_HOP_BYTES = 1024 * 1024;
/** The small payload travels inside its delivery, as an empty hop's would. */
const SMALL_BYTES = 16;

const MAKE = [
  'import os',
  '',
  '',
  'def task(filename, pathin, pathout):',
  '    with open(os.path.join(pathin, filename)) as f:',
  '        n = int(f.read().split()[0])',
  '    out = os.path.join(pathout, "o_make.bin")',
  '    with open(out, "wb") as f:',
  '        f.write(b"\\0" * n)',
  '    return [out]',
  '',
].join('\n');

const TAKE = [
  'import os',
  '',
  '',
  'def task(filename, pathin, pathout):',
  '    out = os.path.join(pathout, "o_take.txt")',
  '    with open(out, "w") as f:',
  '        f.write("probe\\n")',
  '    return [out]',
  '',
].join('\n');

/** Seconds per byte from (large, small) gap pairs: the fastest large gap less the fastest small one over the sizes' difference, never negative. */
export function perByteFromGaps(pairs: Array<{ big: number; small: number }>, bigBytes: number, smallBytes: number): number {
  if (pairs.length === 0 || !(bigBytes > smallBytes)) return 0;
  return Math.max(0, Math.min(...pairs.map((p) => p.big)) - Math.min(...pairs.map((p) => p.small))) / (bigBytes - smallBytes);
}

/**
 * Run `pairs` (large, small) items through the two-task scratch app on this node after a warm-up
 * pair. Undefined when this node cannot run a Python task or the runners cannot start. Its
 * connections and keys are `round`'s (round.ts): abandoning the round ends it.
 */
export async function measureLocalHop(redis: Redis, prefix: string, node: string, pairs = 4, bytes = LOCAL_HOP_BYTES, round = new ProbeRound()): Promise<LocalHopCost | undefined> {
  if (bytes <= INLINE_MAX) throw new Error(`the local hop probe's payload must exceed INLINE_MAX (${INLINE_MAX} bytes)`);
  const dir = await scratchDir('hopprobe');
  const name = `hopprobe-${node.replace(/[^A-Za-z0-9_-]/g, '_')}-${process.pid}`;
  const conns = [round.connect(redis), round.connect(redis, { maxRetriesPerRequest: null })];
  const label = `app ${prefix}${name}`;
  // The probe's own commands go over the round's connection too: on `redis` (which never gives up
  // a command) a probe waited for a Redis gone mid-round, and so did its runner's Python worker.
  const own = conns[0]!;
  const runners: TaskRunner[] = [];
  try {
    const app = await writeScratchApp(join(dir, name), [
      { name: 'make', children: ['take'], script: MAKE },
      { name: 'take', children: ['home'], script: TAKE },
    ]);
    round.made(label, (r) => teardownAppKeys(r, prefix, name));
    await round.guard(configureApp(own, prefix, app.name, { dataPath: 'direct' }));
    const shared = { redis: own, workerRedis: conns[1]! };
    for (const task of app.tasks) {
      runners.push(await round.opened(TaskRunner.start({ app, task, node, redisUrl: '', prefix, workDir: join(dir, 'work', task.name), dataDir: join(dir, 'store'), shared }), () => removeScratch(dir)));
    }
    const k = appKeys(prefix, app.name);
    // Per item: the gap, and this process's CPU from the submit until take has finished (the
    // waiting loop's own calls are the same for both sizes but for a few polls).
    const gap = async (i: number, size: number): Promise<{ sec: number; cpuSec: number } | undefined> => {
      const f = join(dir, `${i}in.txt`);
      await writeFile(f, `${size}\n`);
      const c0 = process.cpuUsage();
      const [it] = await submitItems(own, prefix, app, [f], { runId: 'probe' });
      const deadline = Date.now() + 10_000;
      while (!(await own.hexists(k.rt(it!.item), 'take|finish'))) {
        if (Date.now() > deadline) return undefined;
        await new Promise((r) => setTimeout(r, 5));
      }
      const c = process.cpuUsage(c0);
      const [made, taken] = await own.hmget(k.rt(it!.item), 'make|finish', 'take|start');
      const sec = (Number(taken) - Number(made)) / 1000;
      return Number.isFinite(sec) ? { sec, cpuSec: (c.user + c.system) / 1e6 } : undefined;
    };
    const got: Array<{ big: number; small: number }> = [];
    const cpu: Array<{ big: number; small: number }> = [];
    for (let i = 0; i < pairs + 1; i++) {
      const big = await gap(2 * i, bytes);
      const small = await gap(2 * i + 1, SMALL_BYTES);
      if (big === undefined || small === undefined) return undefined;
      if (i === 0) continue; // the first pair warms the runners, the worker and the store up
      got.push({ big: big.sec, small: small.sec });
      cpu.push({ big: big.cpuSec, small: small.cpuSec });
    }
    return {
      secPerByte: perByteFromGaps(got, bytes, SMALL_BYTES), bigGapSec: median(got.map((p) => p.big)), smallGapSec: median(got.map((p) => p.small)), bytes,
      cpuSecPerByte: perByteFromGaps(cpu, bytes, SMALL_BYTES) / 2,
    };
  } catch {
    return undefined; // no Python here, or a runner could not start: the model keeps the empty hop
  } finally {
    // Together: with Redis gone each close waits CLOSE_GIVE_UP_MS before giving up.
    await round.closing(Promise.all(runners.map((r) => r.close().catch(() => undefined))));
    await round.clean(redis, label);
    await Promise.all(conns.map((c) => round.release(c)));
    await removeScratch(dir);
  }
}
