// JSON schema of an app's scripts/config.json (Jupiter's format; apps may add their own keys).
export const appConfigJsonSchema = {
  $id: 'https://jupiter.dev/schemas/app-config.json',
  title: 'scripts/config.json of a Jupiter app',
  type: 'object',
  required: ['taskname_map'],
  properties: {
    taskname_map: {
      description: 'task -> [script basename (no extension), is_dag_task, ...arguments of a non-DAG helper]',
      type: 'object',
      additionalProperties: {
        type: 'array',
        minItems: 2,
        items: [
          { type: 'string', minLength: 1, maxLength: 200 },
          { type: 'boolean' },
        ],
        additionalItems: { type: ['string', 'number', 'boolean'] },
      },
    },
    exec_profiler: {
      description: 'task -> whether the execution profiler runs it (default true)',
      type: 'object',
      additionalProperties: { type: 'boolean' },
    },
  },
  additionalProperties: true,
} as const;

export interface AppConfigJson {
  taskname_map: Record<string, [string, boolean, ...Array<string | number | boolean>]>;
  exec_profiler?: Record<string, boolean>;
  [extra: string]: unknown;
}
