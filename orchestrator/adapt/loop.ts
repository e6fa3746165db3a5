// The adapt loop (runs in the hub next to the reconciler): every few seconds, for each deployed
// app, plan a re-mapping on the current models (plan.ts) and let decide.ts judge it against the
// `adapt` settings. When it acts, the plan becomes a re-map event (events.ts; the bridge
// publishes it). Lost nodes are the reconciler's (heal/reconciler.ts moves their tasks); this
// loop leaves those plans alone. In mode auto the plan's tasks move live (move.ts) and the event
// is a `remap`; in mode suggest it is a `suggest`.
import type { Redis } from 'ioredis';
import { loadApp } from '../../config/app/load.js';
import { redisKeys } from '../../config/redis-keys.js';
import { ADAPT_DEFAULTS, type AdaptSettings, type ClusterConfig } from '../../config/types.js';
import { connectRedis } from '../../circe/queue/connection.js';
import { readProfiles } from '../profiles/read.js';
import { deployedApps, readDeployment, readMapping } from '../deploy/record.js';
import { decide, type DecisionState } from './decide.js';
import { recordRemap, remapEvent, type RemapEvent } from './events.js';
import { moveTasks } from './move.js';
import { planRemap, remapMapper } from './plan.js';
import type { ExecRecord } from '../../profilers/models/exec-model.js';
import { keepRecords, readExecRecords } from './records.js';

export interface AdaptLoopOptions {
  redisUrl: string;
  cluster: ClusterConfig;
  intervalMs?: number;
  /** Overrides cluster.adapt (tests). */
  settings?: AdaptSettings;
  log?: (line: string) => void;
}

export class AdaptLoop {
  private readonly redis: Redis;
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private readonly states = new Map<string, DecisionState>();
  /** Execution records kept between checks, per app and run (records.ts keepRecords). */
  private readonly records = new Map<string, { runId: string; records: ExecRecord[] }>();
  private readonly log: (line: string) => void;
  /** Events recorded so far (newest last), for tests and the hub's log. */
  readonly events: RemapEvent[] = [];

  constructor(private readonly opts: AdaptLoopOptions) {
    this.redis = connectRedis(opts.redisUrl, { name: 'jupiter:adapt' });
    this.log = opts.log ?? (() => undefined);
  }

  get settings(): AdaptSettings {
    return this.opts.settings ?? this.opts.cluster.adapt ?? ADAPT_DEFAULTS;
  }

  start(): this {
    if (this.settings.mode === 'off') return this;
    const tick = () => {
      this.running = this.checkAll()
        .catch((e: unknown) => this.log(`adapt check failed: ${(e as Error).message}`))
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.opts.intervalMs ?? 5000);
        });
    };
    this.timer = setTimeout(tick, 0);
    return this;
  }

  async stop(): Promise<void> {
    const t = this.timer;
    this.timer = undefined;
    clearTimeout(t);
    await this.running;
    this.redis.disconnect();
  }

  private async checkAll(): Promise<void> {
    const prefix = this.opts.cluster.redisPrefix;
    const snapshot = await readProfiles(this.redis, { prefix });
    if (snapshot.nodes.length === 0) return;
    for (const name of await deployedApps(this.redis, prefix)) {
      // One app that cannot be checked (its folder gone, say) must not stop the others'.
      try {
        await this.checkApp(name, snapshot);
      } catch (e) {
        this.log(`adapt: ${name}: not checked: ${(e as Error).message.split('\n')[0]}`);
      }
    }
  }

  private async checkApp(name: string, snapshot: Awaited<ReturnType<typeof readProfiles>>): Promise<void> {
    const prefix = this.opts.cluster.redisPrefix;
    const current = await readMapping(this.redis, prefix, name);
    const dep = await readDeployment(this.redis, prefix, name);
    if (!current || !dep) return;
    const app = await loadApp(dep.appDir);
    const kept = this.records.get(name);
    const records = keepRecords(kept?.runId === dep.runId ? kept.records : [], await readExecRecords(this.redis, name, { prefix }), { now: Date.now() });
    this.records.set(name, { runId: dep.runId, records });
    const plan = planRemap({ app, snapshot, records, current, mapper: remapMapper(current, this.opts.cluster.mapper) });
    if (plan.lostNodes.length > 0) return; // the reconciler's job
    const now = Date.now();
    const { verdict, state } = decide(this.settings, this.states.get(name) ?? {}, plan, now);
    this.states.set(name, state);
    if (!verdict.act) return;
    const what = plan.moves.map((m) => `${m.task} ${m.from}->${m.to}`).join(', ');
    if (this.settings.mode === 'auto') {
      this.log(`adapt: ${name}: ${verdict.why}; moving ${what}`);
      const { event, movedMs } = await moveTasks({ redis: this.redis, cluster: this.opts.cluster, redisUrl: this.opts.redisUrl, log: this.log }, app, plan, 'gain', { dep, current });
      this.events.push(event);
      this.log(`adapt: ${name}: moved ${what} in ${(movedMs / 1000).toFixed(1)} s`);
      return;
    }
    const ev = remapEvent(plan, 'suggest', 'gain', now);
    await recordRemap(this.redis, redisKeys(prefix), ev);
    this.events.push(ev);
    this.log(`adapt: ${name}: ${verdict.why}; suggested ${what}`);
  }
}
