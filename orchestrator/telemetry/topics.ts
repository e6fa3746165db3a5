// MQTT topics and payloads Jupiter publishes (documented in README.md, one JSON schema each in
// schemas/). Durations are seconds, time stamps ms since epoch.
import { HOME, type AppSpec } from '../../config/types.js';
import type { MappingRecord, ScheduledTask, TaskEventType } from '../../config/events.js';

export const TOPIC_ROOT = 'jupiter';
/** The original Jupiter's single plain-text topic (compatibility publisher). */
export const COMPAT_TOPIC = 'JUPITER';

export const topics = {
  mapping: (app: string): string => `${TOPIC_ROOT}/${app}/mapping`,
  task: (app: string, task: string): string => `${TOPIC_ROOT}/${app}/tasks/${task}`,
  stats: (app: string): string => `${TOPIC_ROOT}/${app}/stats`,
  node: (node: string): string => `${TOPIC_ROOT}/nodes/${node}`,
  /** Lossy or dead links/nodes localised from echo-probe loss (retained). */
  faults: (): string => `${TOPIC_ROOT}/network/faults`,
  /** A re-mapping suggested or carried out (orchestrator/adapt). */
  remap: (app: string): string => `${TOPIC_ROOT}/${app}/remap`,
  /** Subscription filter for everything of one app. */
  appAll: (app: string): string => `${TOPIC_ROOT}/${app}/#`,
};

/** jupiter/<app>/mapping (retained). */
export interface MappingMessage {
  app: string;
  mapper: string;
  mapping: Record<string, string>;
  schedule: ScheduledTask[];
  predictedMakespanSec: number;
  dag: { tasks: Array<{ name: string; children: string[]; sink?: boolean }> };
  ts: number;
}

/** jupiter/<app>/tasks/<task> (retained: the task's last event). */
export interface TaskMessage {
  app: string;
  task: string;
  event: TaskEventType;
  item: string;
  node: string;
  ts: number;
  durationSec?: number;
  error?: string;
  attempt?: number;
  final?: boolean;
}

/** jupiter/network/faults (retained, every poll interval while echo probes report). */
export interface FaultsMessage {
  faults: Array<{ kind: 'link' | 'node' | 'other'; element: string; nodes: string[]; loss: number; dead: boolean; paths: number; ambiguousWith: string[] }>;
  /** Recent echo-probe loss per directed link. */
  links: Array<{ from: string; to: string; sent: number; lost: number }>;
  ts: number;
}

/** jupiter/<app>/remap (retained: the newest re-map event; orchestrator/adapt/events.ts). */
export type { RemapEvent as RemapMessage } from '../adapt/events.js';

/** jupiter/nodes/<node> (retained). */
export interface NodeMessage {
  node: string;
  /** The agent's registration is alive (its heartbeat key has not expired). */
  alive: boolean;
  /** When the agent last reported resources, ms since epoch (0 = never). */
  heartbeatAt: number;
  cpuPercent: number | null;
  memPercent: number | null;
  cores: number | null;
  load1: number | null;
  freeMemBytes: number | null;
  ts: number;
}

export interface TaskStats {
  entered: number;
  started: number;
  processed: number;
  /** Items given up on (final failures). */
  failed: number;
  /** Failed attempts, retried or not. */
  failedAttempts: number;
  /** In the task's queue: entered, not started (or failed and waiting for a retry). */
  waiting: number;
  running: number;
  meanDurationSec: number | null;
  node: string | null;
}

/** jupiter/<app>/stats (retained, every few seconds). */
export interface StatsMessage {
  app: string;
  ts: number;
  windowSec: number;
  itemsDone: number;
  itemsFailed: number;
  /** Items finished at the sink per second over the last windowSec. */
  throughput: number;
  makespanP50Sec: number | null;
  makespanP95Sec: number | null;
  makespanLastSec: number | null;
  /** Items waiting in all queues, and items being processed. */
  queued: number;
  running: number;
  tasks: Record<string, TaskStats>;
}

/** The DAG part of a MappingRecord, from an AppSpec (for the deploy pipeline). */
export function dagSummary(app: AppSpec): NonNullable<MappingRecord['dag']> {
  const byName = new Map(app.tasks.map((t) => [t.name, t]));
  return {
    tasks: app.dagTasks.map((name) => {
      const children = byName.get(name)?.children ?? [];
      const sink = children.includes(HOME);
      return { name, children: children.filter((c) => c !== HOME), ...(sink ? { sink } : {}) };
    }),
  };
}

export function mappingMessage(rec: MappingRecord): MappingMessage {
  // Without a DAG in the record, viewers still get every mapped task (without edges).
  const dag = rec.dag ?? { tasks: Object.keys(rec.mapping).map((name) => ({ name, children: [] })) };
  return {
    app: rec.app,
    mapper: rec.mapper,
    mapping: rec.mapping,
    schedule: rec.schedule ?? [],
    predictedMakespanSec: rec.predictedMakespan,
    dag,
    ts: rec.ts,
  };
}
