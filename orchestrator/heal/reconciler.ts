// Self-healing of deployments when a node is lost. Every few seconds, for each deployed app, the
// reconciler compares the nodes its tasks are mapped to with the nodes whose agents are alive
// (heartbeat keys expire within 2.5 heartbeat periods). Tasks of a lost node are moved to the
// surviving nodes (mappers/repair.ts: the others stay put), their runners are started there, and
// the new placement is written where the dashboard and `status` read it. Items the lost runners
// held go straight back to their queues (requeue.ts), so the stream continues without loss. A
// missing heartbeat counts only while another node has been live without a break (witness.ts).
import type { Redis } from 'ioredis';
import type { MappingRecord } from '../../config/events.js';
import { loadApp } from '../../config/app/load.js';
import { redisKeys } from '../../config/redis-keys.js';
import { HOME, type ClusterConfig } from '../../config/types.js';
import { placeHelperTasks, problemFromProfiles, repairMapping } from '../../mappers/index.js';
import { liveAgents } from '../../profilers/agent/registry.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { readProfiles } from '../profiles/read.js';
import { deployedApps, readDeployment, readMapping } from '../deploy/record.js';
import { relocateTasks } from '../deploy/relocate.js';
import { observeLive, WITNESS_MS } from './witness.js';
import { MOVE_GRACE_SEC } from '../adapt/move.js';

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
  /** When each live node was first seen live without a break since (the hub's clock). */
  private readonly liveSince = new Map<string, number>();
  private holdSaid = false;
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
          if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs ?? 2000);
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
    const live = new Set((await liveAgents(this.redis, redisKeys(prefix))).map((a) => a.node));
    const done: Repair[] = [];
    if (!this.witnessed(live)) return done;
    for (const name of await deployedApps(this.redis, prefix)) {
      const rec = await readMapping(this.redis, prefix, name);
      if (!rec) continue;
      const lost = [...new Set(Object.values(rec.mapping))].filter((n) => n !== HOME && !live.has(n));
      if (lost.length === 0 || live.size === 0) continue;
      const repair = await this.repairApp(name, rec, lost, [...live].filter((n) => cluster.nodes.some((c) => c.name === n)));
      if (repair) done.push(repair);
    }
    return done;
  }

  /** Whether a missing heartbeat can mean a lost node now (witness.ts); says so when that changes. */
  private witnessed(live: Set<string>): boolean {
    const witness = observeLive(this.liveSince, live, Date.now(), WITNESS_MS, !this.seenAny);
    this.seenAny ||= live.size > 0;
    // Said once per hold, when nodes are back but none for long enough (while none is live, nothing can move anyway).
    if (!witness && live.size > 0 && !this.holdSaid) this.log(`no node has been live for ${WITNESS_MS / 1000} s without a break (the home's links back?): no node counts as lost until one has`);
    this.holdSaid = !witness && (this.holdSaid || live.size > 0);
    return witness;
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
