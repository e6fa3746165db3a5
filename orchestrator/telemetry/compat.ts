// Plain-text payloads of the original Jupiter's live dashboard (topic `JUPITER`), for tools
// written against it: `<task> starts`, `<task> ends`, `mappings <task>:<node>:<unixts> ...`.
import type { MappingRecord, TaskEvent } from '../../config/events.js';

/** The compat line for a task event, or undefined for events the original did not publish. */
export function compatTaskLine(ev: TaskEvent): string | undefined {
  if (ev.type === 'start') return `${ev.task} starts`;
  if (ev.type === 'finish') return `${ev.task} ends`;
  return undefined;
}

/** The original used whole Unix seconds for the mapping time stamp. */
export function compatMappingLine(rec: MappingRecord): string {
  const ts = Math.floor(rec.ts / 1000);
  return `mappings ${Object.entries(rec.mapping).map(([task, node]) => `${task}:${node}:${ts}`).join(' ')}`;
}
