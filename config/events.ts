// Runtime events of a deployed app. Runners append them to a capped Redis stream
// (key `<prefix>app:<app>:events`, field `json`); the orchestrator's telemetry bridge
// republishes them over MQTT, so a missing broker can never slow the pipeline.

export type TaskEventType = 'enter' | 'start' | 'finish' | 'fail';

export interface TaskEvent {
  type: TaskEventType;
  app: string;
  task: string;
  node: string;
  /** Stream item id the event belongs to. */
  item: string;
  /** ms since epoch */
  ts: number;
  /** For finish: execution time in ms. */
  durationMs?: number;
  /** For fail: the error message. */
  error?: string;
  /** For fail: attempt number (1-based) and whether it is final (dead-lettered). */
  attempt?: number;
  final?: boolean;
}

/** The home's sink: one item's outputs all arrived. */
export interface ItemDoneEvent {
  type: 'item-done';
  app: string;
  item: string;
  /** ms from the item entering the DAG to its last output at the sink. */
  makespanMs: number;
  outputs: string[];
  /** The item failed somewhere (dead-lettered); its record holds the error. */
  failed?: boolean;
  ts: number;
}

export type AppEvent = TaskEvent | ItemDoneEvent;

/** One task of the mapper's predicted schedule (seconds from the start of one item). */
export interface ScheduledTask {
  task: string;
  node: string;
  start: number;
  finish: number;
}

/**
 * The current deployment of an app, stored as JSON at `redisKeys(prefix).mapping(app)` by the
 * deploy pipeline; the telemetry bridge publishes it (retained) on `jupiter/<app>/mapping`.
 */
export interface MappingRecord {
  app: string;
  mapper: string;
  /** task -> node */
  mapping: Record<string, string>;
  schedule: ScheduledTask[];
  /** Predicted makespan of one item, seconds. */
  predictedMakespan: number;
  /** ms since epoch */
  ts: number;
  /** The DAG, so that viewers can draw it: children exclude `home`; `sink` marks tasks that feed the home. */
  dag?: { tasks: Array<{ name: string; children: string[]; sink?: boolean }> };
}
