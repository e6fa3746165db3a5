// JSON schema of the normalised app model (AppSpec without its graph): what loadApp() guarantees
// to every consumer, checked on every load.
const name = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$', maxLength: 64 } as const;
const names = { type: 'array', items: name } as const;
const portMap = { type: 'object', additionalProperties: { type: 'integer', minimum: 1, maximum: 65535 } } as const;

export const appSpecSchema = {
  $id: 'https://jupiter.dev/schemas/app-spec.json',
  title: 'Normalised Jupiter app (AppSpec without graph)',
  type: 'object',
  required: ['name', 'dir', 'tasks', 'dagTasks', 'entryTasks', 'sinkTasks', 'staticPlacement', 'ports', 'nameConvert', 'inputNode', 'sampleInputs', 'extra'],
  properties: {
    name,
    dir: { type: 'string', minLength: 1 },
    tasks: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['name', 'numInputs', 'broadcast', 'children', 'isDag', 'script', 'scriptFile', 'language', 'args', 'execProfiler', 'line'],
        properties: {
          name,
          numInputs: { type: 'integer', minimum: 1 },
          broadcast: { type: 'boolean' },
          children: { type: 'array', minItems: 1, items: name },
          isDag: { type: 'boolean' },
          script: { type: 'string', minLength: 1 },
          scriptFile: { type: 'string', minLength: 1 },
          language: { enum: ['python', 'javascript', 'typescript', 'shell'] },
          args: { type: 'array', items: { type: ['string', 'number', 'boolean'] } },
          execProfiler: { type: 'boolean' },
          line: { type: 'integer', minimum: 1 },
        },
        additionalProperties: false,
      },
    },
    dagTasks: { ...names, minItems: 1 },
    entryTasks: { ...names, minItems: 1 },
    sinkTasks: { ...names, minItems: 1 },
    staticPlacement: { type: 'object', additionalProperties: name },
    ports: {
      type: 'object',
      required: ['docker', 'service'],
      properties: { docker: portMap, service: portMap },
      additionalProperties: false,
    },
    nameConvert: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['output', 'input'],
        properties: { output: { type: 'string' }, input: { type: 'string' } },
        additionalProperties: false,
      },
    },
    inputNode: { type: 'object', additionalProperties: name },
    sampleInputs: { type: 'array', items: { type: 'string' } },
    extra: { type: 'object' },
  },
  additionalProperties: true,
} as const;
