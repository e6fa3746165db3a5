// Pipelines without ioredis' per-pipeline copy of every script. ioredis' Pipeline constructor
// copies each command defined on its connection (defineCommand) onto the new object, and BullMQ
// defines ~50 on the connections Jupiter shares with it: measured 58 µs a pipeline in a tight loop
// on this project's 2-core VMs and ~0.2 ms in a runner's CPU profile of isolated items, where a
// stream pays several pipelines per item (the source, each task's commit, the sink, the waiter).
// Here one subclass per connection carries those commands on its prototype: 12 µs a pipeline.
import type { ChainableCommander, Redis } from 'ioredis';

/** The parts of an ioredis connection the Pipeline constructor reads. */
interface Connection {
  scriptsSet: Record<string, unknown>;
  addedBuiltinSet: Set<string>;
  options: unknown;
}

type PipelineClass = new () => ChainableCommander;

const classes = new WeakMap<Redis, { commands: number; Lean: PipelineClass }>();

/** A new pipeline on `redis`, as `redis.pipeline()` gives (commands run in order, one write). */
export function pipeline(redis: Redis): ChainableCommander {
  const conn = redis as unknown as Connection;
  // Commands defined after the class was made (a later defineCommand) make a new class.
  const commands = Object.keys(conn.scriptsSet).length + conn.addedBuiltinSet.size;
  let c = classes.get(redis);
  if (!c || c.commands !== commands) {
    c = { commands, Lean: leanClass(redis, conn) };
    classes.set(redis, c);
  }
  return new c.Lean();
}

function leanClass(redis: Redis, conn: Connection): PipelineClass {
  const Base = Object.getPrototypeOf(redis.pipeline()).constructor as new (r: unknown) => ChainableCommander;
  // The constructor copies commands from this stand-in (none) and keeps it as its connection; the
  // real connection replaces it at once (exec sends through `this.redis`). ioredis' own copy of
  // the scripts by sha is never read: scripts are loaded per socket (Script.ts).
  const standIn = { scriptsSet: {}, addedBuiltinSet: new Set<string>(), options: conn.options, isCluster: false, constructor: redis.constructor };
  class Lean extends Base {
    constructor() {
      super(standIn);
      (this as unknown as { redis: Redis }).redis = redis;
    }
  }
  const proto = Lean.prototype as unknown as Record<string, unknown>;
  const source = redis as unknown as Record<string, unknown>;
  for (const name of [...Object.keys(conn.scriptsSet), ...conn.addedBuiltinSet]) {
    proto[name] = source[name];
    proto[`${name}Buffer`] = source[`${name}Buffer`];
  }
  return Lean;
}
