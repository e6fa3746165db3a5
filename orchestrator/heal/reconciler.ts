// Self-healing of deployments when a node is lost. Every few seconds, for each deployed app, the
// reconciler compares the nodes its tasks are mapped to with the nodes whose agents are alive
// (heartbeat keys expire within 2.5 heartbeat periods). Tasks of a lost node are moved to the
// surviving nodes (mappers/repair.ts: the others stay put), their runners are started there, and
// the new placement is written where the dashboard and `status` read it. Items the lost runners
// held go straight back to their queues (requeue.ts), so the stream continues without loss. A
// missing heartbeat counts only on the word of a witness: another node live without a break for a
// while that has beaten since it expired (witness.ts).
import type { Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import { loadApp } from '../../config/app/load.js';
import { redisKeys } from '../../config/redis-keys.js';
import { HOME, type ClusterConfig } from '../../config/types.js';
import { placeHelperTasks, problemFromProfiles, repairMapping } from '../../mappers/index.js';
import { heartbeatTimes } from '../../profilers/agent/registry.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { readProfiles } from '../profiles/read.js';
import { deployedApps, readDeployment, readMapping } from '../deploy/record.js';
import { relocateTasks } from '../deploy/relocate.js';
import { countsLost, newLiveness, observeLive, WITNESS_MS } from './witness.js';
import { MOVE_GRACE_SEC } from '../adapt/move.js';

/** How soon the next look comes while a missing heartbeat waits for a witness (witness.ts). */
const HELD_LOOK_MS = 250;
/** A hold is said in the log once it lasted this long. */
const HOLD_SAID_MS = 5000;

export interface ReconcilerOptions {
  redisUrl: string;
  cluster: ClusterConfig;
  intervalMs?: number;
  log?: (line: string) => void;
}

export interface Repair {
  app: string;
  lost: string[];
  moved: Record<string, [string, string]>;
  at: number;
}

export class Reconciler {
  private readonly redis: Redis;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private readonly log: (line: string) => void;
  /** Repairs done so far (newest last), for tests and the hub's log. */
  readonly repairs: Repair[] = [];
  /** What the hub has seen of the heartbeats (witness.ts). */
  private readonly liveness = newLiveness();
  /** Since when some missing heartbeat has waited for a witness without a break (0: none waits), and whether that was said. */
  private heldSince = 0;
  private heldSaid = false;
  private seenAny = false;

  constructor(private readonly opts: ReconcilerOptions) {
    this.redis = connectRedis(opts.redisUrl, { name: 'jupiter:reconciler' });
    this.log = opts.log ?? (() => undefined);
  }

  start(): this {
    const tick = () => {
      this.running = this.reconcileAll()
        .then(() => undefined)
        .catch((e: unknown) => this.log(`reconcile failed: ${(e as Error).message}`))
        .finally(() => {
          // A missing heartbeat waiting for a witness's beat is looked at again soon: the loss
          // counts from that beat, not from the next regular look after it.
          if (this.timer) this.timer = setTimeout(tick, this.heldSince ? Math.min(HELD_LOOK_MS, this.opts.intervalMs ?? 2000) : this.opts.intervalMs ?? 2000);
        });
    };
    this.timer = setTimeout(tick, 0);
    return this;
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    if (t) clearTimeout(t);
    await this.running;
    this.redis.disconnect();
  }

  /** One pass over every deployed app; returns the repairs it made. */
  async reconcileAll(): Promise<Repair[]> {
    const { cluster } = this.opts;
    const prefix = cluster.redisPrefix;
    const beats = await heartbeatTimes(this.redis, redisKeys(prefix));
    const now = Date.now();
    observeLive(this.liveness, beats, now, WITNESS_MS, !this.seenAny);
    this.seenAny ||= beats.size > 0;
    const live = new Set(beats.keys());
    const done: Repair[] = [];
    const held = new Set<string>();
    for (const name of await deployedApps(this.redis, prefix)) {
      const rec = await readMapping(this.redis, prefix, name);
      if (!rec) continue;
      const missing = [...new Set(Object.values(rec.mapping))].filter((n) => n !== HOME && !live.has(n));
      const lost = missing.filter((n) => countsLost(this.liveness, n, now, WITNESS_MS));
      for (const n of missing) if (!lost.includes(n)) held.add(n);
      // countsLost needs a live witness: a lost node always leaves live ones to move its tasks to.
      if (lost.length === 0) continue;
      const repair = await this.repairApp(name, rec, lost, [...live].filter((n) => cluster.nodes.some((c) => c.name === n)));
      if (repair) done.push(repair);
    }
    // Said once per hold (witness.ts) that outlasts a heartbeat period or so (a node really lost
    // waits for the others' next beat only): heartbeats missing with no node to vouch for the loss.
    if (held.size === 0) {
      this.heldSince = 0;
      this.heldSaid = false;
    } else {
      this.heldSince ||= now;
      if (!this.heldSaid && now - this.heldSince >= HOLD_SAID_MS) {
        this.log(`heartbeat of ${[...held].join(', ')} missing, but no node has been live for ${WITNESS_MS / 1000} s and beaten since it expired (the home's links down, or just back?): not counted as lost yet`);
        this.heldSaid = true;
      }
    }
    return done;
  }

  private async repairApp(name: string, rec: MappingRecord, lost: string[], live: string[]): Promise<Repair | undefined> {
    const { cluster } = this.opts;
    const prefix = cluster.redisPrefix;
    const dep = await readDeployment(this.redis, prefix, name);
    if (!dep || live.length === 0) return undefined;
    const app = await loadApp(dep.appDir);
    const snap = await readProfiles(this.redis, { prefix });
    const problem = problemFromProfiles(app, snap, { nodes: live });
    const dagMapping = Object.fromEntries(app.dagTasks.map((t) => [t, rec.mapping[t]!]));
    const fixed = repairMapping(problem, dagMapping);
    const helpers = app.tasks.filter((t) => !t.isDag && lost.includes(rec.mapping[t.name]!));
    const helperNodes = placeHelperTasks({ ...app, tasks: helpers }, live);
    const moved: Record<string, [string, string]> = { ...fixed.moved };
    for (const [t, n] of Object.entries(helperNodes)) moved[t] = [rec.mapping[t]!, n];
    this.log(`${name}: node(s) ${lost.join(', ')} lost; moving ${Object.entries(moved).map(([t, [a, b]]) => `${t} ${a}->${b}`).join(', ')}`);
    // The new runners take back the jobs the lost ones held as they start (requeueHeldJobs).
    // With a grace: a runner left on a node that is alive after all (its agent died, or came back
    // late) hands over what it stored before it goes, instead of leaving its receivers to wait.
    await relocateTasks({ redis: this.redis, cluster, redisUrl: this.opts.redisUrl }, app, dep, rec, problem, Object.fromEntries(Object.entries(moved).map(([t, [, to]]) => [t, to])), { suffix: '+repair', moveGraceSec: MOVE_GRACE_SEC });
    const repair = { app: name, lost, moved, at: Date.now() };
    this.repairs.push(repair);
    return repair;
  }
}
