// JSON schema of a testbed topology file (`jupiter testbed up <topology.json>`): the hosts of an
// emulated dispersed network on one Linux machine, their uplinks and CPU limits, and per-pair
// link rates. Resolved (defaults, names, rates) by config/testbed/topology.ts.
const rate = {
  type: 'string',
  pattern: '^[0-9]+(\\.[0-9]+)?\\s*(bit|kbit|mbit|gbit)$',
  description: 'a rate as tc writes it: 500kbit, 20mbit, 1gbit (10^3 multiples, bits per second)',
} as const;
const hostName = { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$', maxLength: 32 } as const;
const cpus = { type: 'number', exclusiveMinimum: 0, maximum: 1024, description: 'CPU limit shared by every container of the host (agent and runners)' } as const;

export const testbedTopologySchema = {
  $id: 'https://jupiter.dev/schemas/testbed-topology.json',
  title: 'testbed topology: hosts and links of an emulated dispersed network',
  type: 'object',
  required: ['hosts'],
  properties: {
    $schema: { type: 'string' },
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$', maxLength: 32, description: 'shown by `testbed status`' },
    subnet: { type: 'string', pattern: '^10\\.[0-9]{1,3}\\.[0-9]{1,3}\\.0/24$', description: 'private /24 of the testbed (default: the first unused 10.251.X.0/24)' },
    defaults: {
      type: 'object',
      description: 'what a host or link leaves out',
      properties: { uplink: rate, cpus },
      additionalProperties: false,
    },
    home: {
      type: 'object',
      description: 'the home (Redis, hub side): its own namespace on the emulated network',
      properties: { uplink: rate },
      additionalProperties: false,
    },
    hosts: {
      type: 'array',
      minItems: 1,
      maxItems: 200,
      items: {
        type: 'object',
        required: ['name'],
        properties: { name: hostName, uplink: rate, cpus },
        additionalProperties: false,
      },
    },
    links: {
      type: 'array',
      description: 'per-pair rates overriding the uplinks (the slower uplink of the two otherwise)',
      items: {
        type: 'object',
        required: ['between', 'rate'],
        properties: {
          between: { type: 'array', items: hostName, minItems: 2, maxItems: 2 },
          rate,
          oneWay: { type: 'boolean', description: 'true: only from between[0] to between[1] (default both ways)' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

export interface TopologyFile {
  $schema?: string;
  name?: string;
  subnet?: string;
  defaults?: { uplink?: string; cpus?: number };
  home?: { uplink?: string };
  hosts: Array<{ name: string; uplink?: string; cpus?: number }>;
  links?: Array<{ between: [string, string]; rate: string; oneWay?: boolean }>;
}
