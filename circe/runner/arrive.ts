// The first step of a delivery at a runner: one ARRIVE script call for a group of deliveries
// records their enter times and returns each one's verdict, with the input bytes of those that
// can run now (so that a run costs one round trip).
import type { Job } from 'bullmq';
import type { TaskSpec } from '../../config/types.js';
import type { StoredInput } from '../queue/failures.js';
import type { AppKeys } from '../queue/keys.js';
import { LUA_BYTES_MAX, type BundleJob, type Delivery } from '../queue/naming.js';
import type { ScriptedRedis } from '../queue/scripts.js';

/** A delivery in hand, with the job that brought it (`at`: when it entered the task). */
export interface InHand {
  job: Job<BundleJob>;
  d: Delivery;
  at: number;
}

export type Arrival =
  /** The task already ran for the item; `outbox` is what that run sent (JSON). */
  | { kind: 'dup'; outbox: string }
  /** A join input, stored until the item's other inputs are here. */
  | { kind: 'wait' }
  /** Run now on these inputs. */
  | { kind: 'run'; pairs: Array<{ inp: StoredInput; bytes: Buffer }> };

export async function arriveGroup(redis: ScriptedRedis, k: AppKeys, task: TaskSpec, group: InHand[], node: string): Promise<Arrival[]> {
  const T = task.name;
  const keys: string[] = [];
  // What a join that never completes reports in its dead letter (see scripts.ts stuck_joins).
  const meta = JSON.stringify({ app: k.app, task: T, node, n: task.numInputs });
  const args: Array<string | number> = [task.numInputs, `${T}|enter`, k.blob(''), meta];
  // A large single input's bytes come from a plain GET sent right behind the script (cheaper for
  // Redis than through Lua); its blob stays until this delivery is finished, so it cannot go
  // between the two.
  const apart = group.map(({ d }) => task.numInputs <= 1 && !d.src && d.inline === undefined && (d.size ?? 0) > LUA_BYTES_MAX);
  group.forEach(({ d, at }, i) => {
    const mine: StoredInput = { id: d.id, name: d.name, blob: d.blob, from: d.from, at, size: d.size, ...(d.src ? { src: d.src } : {}) };
    keys.push(k.done(T, d.item), k.join(T, d.item), k.rt(d.item), k.blob(d.blob), k.joins(d.item), k.done(d.from, d.item));
    args.push(d.id, JSON.stringify(mine), at, apart[i] ? '1' : '0');
  });
  const verdicts = redis.jArriveBuffer(keys.length, ...keys, ...args);
  const bytes = group.map(({ d }, i) => (apart[i] ? redis.getBuffer(k.blob(d.blob)) : undefined));
  const [res, got] = await Promise.all([verdicts, Promise.all(bytes)]);
  return res.map((r, j): Arrival => {
    const verdict = r[0]!.toString();
    if (verdict === 'dup') return { kind: 'dup', outbox: r[1]?.toString() ?? '' };
    // A phantom (see scripts.ts PHANTOM_FN) is finished and counted like a duplicate, with
    // nothing to re-send.
    if (verdict === 'phantom') return { kind: 'dup', outbox: '' };
    if (verdict === 'wait') return { kind: 'wait' };
    const pairs: Array<{ inp: StoredInput; bytes: Buffer }> = [];
    for (let i = 1; i + 1 < r.length; i += 2) pairs.push({ inp: JSON.parse(r[i]!.toString()) as StoredInput, bytes: apart[j] ? got[j] ?? Buffer.alloc(0) : r[i + 1]! });
    return { kind: 'run', pairs };
  });
}
