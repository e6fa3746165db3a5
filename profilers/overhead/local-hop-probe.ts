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
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { INLINE_MAX } from '../../circe/queue/naming.js';
import { median } from './median.js';
import { ProbeRound } from './round.js';
import { withScratchRun } from './scratch-run.js';

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
  return withScratchRun({
    redis, prefix, node, round, kind: 'hopprobe',
    tasks: [
      { name: 'make', children: ['take'], script: MAKE },
      { name: 'take', children: ['home'], script: TAKE },
    ],
    settings: { dataPath: 'direct' },
    runner: (task, dir) => ({ redisUrl: '', workDir: join(dir, 'work', task.name), dataDir: join(dir, 'store') }),
  }, async ({ own, input, submitAndWait }) => {
    // Per item: the gap, and this process's CPU from the submit until take has finished (the
    // waiting loop's own calls are the same for both sizes but for a few polls).
    const gap = async (i: number, size: number): Promise<{ sec: number; cpuSec: number } | undefined> => {
      const f = await input(i, `${size}\n`);
      const c0 = process.cpuUsage();
      const rt = await submitAndWait(f, 'take', 5);
      if (!rt) return undefined;
      const c = process.cpuUsage(c0);
      const [made, taken] = await own.hmget(rt, 'make|finish', 'take|start');
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
  });
}
