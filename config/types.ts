// Shared domain types. Every other folder imports these; this file imports nothing of ours.
// Units inside Jupiter: seconds and bytes, always.
import type { Graph } from '@dagrejs/graphlib';

/** Literal child name that marks a sink: the task's outputs go back to the home. */
export const HOME = 'home';

/** Names usable as queue, container and file names. */
export const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;

export type ScriptLanguage = 'python' | 'javascript' | 'typescript' | 'shell';

export interface TaskSpec {
  name: string;
  /** Inputs of the same stream item needed before the task runs (a join when > 1). */
  numInputs: number;
  /** FLAG: true = every output to every child; false = i-th output to i-th child. */
  broadcast: boolean;
  /** Children in file order; may contain HOME. Empty for non-DAG helper tasks. */
  children: string[];
  /** false for `<name> 1 false <name>` helper tasks that run once as scripts. */
  isDag: boolean;
  /** Script basename from scripts/config.json taskname_map. */
  script: string;
  /** Absolute path of the script file. */
  scriptFile: string;
  language: ScriptLanguage;
  /** Extra taskname_map entries (arguments of a non-DAG helper). */
  args: Array<string | number | boolean>;
  /** exec_profiler flag: false means the execution profiler skips this task. */
  execProfiler: boolean;
  /** 1-based line in configuration.txt. */
  line: number;
}

export interface AppSpec {
  name: string;
  /** Absolute app folder. */
  dir: string;
  /** Every task in configuration.txt order (the first DAG task is the entry task). */
  tasks: TaskSpec[];
  /** DAG tasks only, in file order. */
  dagTasks: string[];
  /** DAG tasks with no DAG parent: the home feeds them. */
  entryTasks: string[];
  /** DAG tasks with `home` among their children. */
  sinkTasks: string[];
  /** DAG over DAG tasks only; graph label = app name, node labels are the TaskSpec, edge labels undefined.
   *  (graphlib's type parameters are <GraphLabel, NodeLabel, EdgeLabel>.) */
  graph: Graph<string, TaskSpec, undefined>;
  /** Optional trailing `<task> <node>` lines. */
  staticPlacement: Record<string, string>;
  /** app_config.ini sections. */
  ports: { docker: Record<string, number>; service: Record<string, number> };
  /** name_convert.txt: task -> [output token, input token]; key `input` for the global input. */
  nameConvert: Record<string, { output: string; input: string }>;
  /** input_node.txt: entry task -> node. */
  inputNode: Record<string, string>;
  /** Absolute paths of the files in sample_input/, sorted. */
  sampleInputs: string[];
  /** Extra keys of scripts/config.json that apps may add. */
  extra: Record<string, unknown>;
  /** Lines of the static placement (configuration.txt) and input_node.txt entries, for messages. */
  sourceLines?: { staticPlacement: Record<string, number>; inputNode: Record<string, number> };
}

// ---- cluster configuration ----

export type DockerEndpoint =
  | { kind: 'socket'; socketPath: string }
  | { kind: 'tcp'; host: string; port: number; tls?: { ca?: string; cert?: string; key?: string } }
  | { kind: 'ssh'; host: string; port?: number; username?: string };

export interface NodeConfig {
  name: string;
  /** Host name or address of the machine. */
  host: string;
  /** Docker engine of this node (docker runtime). */
  docker?: DockerEndpoint;
  /**
   * true when the configuration names this node's engine (nodes[].docker): `stack up` and `deploy`
   * then start its agent as a container there (orchestrator/stack/node-agents.ts).
   */
  agentOnEngine?: boolean;
  /** Where this node's agent listens for probes: host:port. */
  agent?: { host: string; port: number };
  /**
   * CPUs the node may use (cores, may be fractional), when less than its machine has: a quota the
   * node's own processes cannot see (a parent cgroup, a VM's share). Its agent publishes it in its
   * resource profile, in place of what it can read from its own cgroup.
   */
  cpus?: number;
}

export type RuntimeName = 'process' | 'docker';

/** Where output bytes travel: through the home's Redis, or from the producing node to the receiving one. */
export type DataPath = 'central' | 'direct';

export interface ClusterConfig {
  /** Where the configuration came from (file paths), or 'embedded default'. */
  source: string;
  /** true when Jupiter starts its own Redis and MQTT broker. */
  embedded: boolean;
  /** Redis URL; undefined = a private redis-server started by Jupiter. */
  redisUrl?: string;
  mqtt: {
    url?: string; username?: string; password?: string; compat: boolean;
    /** TLS of an mqtts:// / wss:// broker: absolute PEM file paths; rejectUnauthorized false only for tests. */
    tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  };
  mapper: string;
  runtime: RuntimeName;
  /** Where output bytes travel by default (a deploy may override): central (via Redis) or direct (node to node). */
  dataPath: DataPath;
  /** First entry is always the home. */
  home: NodeConfig;
  /** Compute nodes (never the home). */
  nodes: NodeConfig[];
  docker: {
    baseImage: string;
    network: 'host' | 'bridge';
    cpus: number;
    memoryMb: number;
    /** Restart policy of task containers (docker runtime); default 'on-failure'. */
    restart?: 'on-failure' | 'unless-stopped';
  };
  /** Key prefix for everything Jupiter writes to Redis. */
  redisPrefix: string;
  /** Folder for state of the embedded stack and deployments (absolute). Rule: a relative
   *  stateDir is resolved against the folder of the configuration file that sets it; with no
   *  configuration file, .jupiter in the working directory. */
  stateDir: string;
  /** Why stateDir is where it is, for messages (`stack status`, `deploy`). */
  stateDirOrigin?: string;
  /** Adaptive placement (orchestrator/adapt); the loader fills in the defaults. */
  adapt?: AdaptSettings;
  /** Node agents' profiling settings; the loader fills in the defaults. */
  profiling?: { probeBudget: number; probeSizesKb?: number[]; bootstrapRounds?: number; refreshSec?: number; probeTimeoutSec?: number };
}

export type AdaptMode = 'off' | 'suggest' | 'auto';

export interface AdaptSettings {
  mode: AdaptMode;
  /** Predicted makespan gain that counts (fraction, 0.2 = 20%). */
  threshold: number;
  /** How long the gain must last before acting (seconds). */
  holdSec: number;
}

export const ADAPT_DEFAULTS: AdaptSettings = { mode: 'suggest', threshold: 0.2, holdSec: 30 };
export const DEFAULT_PROBE_BUDGET = 0.02;

// ---- profiles (written by profilers/, read by the mapping pipeline) ----

export interface NodeResources {
  node: string;
  cpuPercent: number;
  cpuMean: number;
  memPercent: number;
  memMean: number;
  cores: number;
  /**
   * The machine the node runs on (its kernel's boot id, circe/runtime/machine.ts): nodes on one
   * machine share its cores, containers and namespaces included.
   */
  host?: string;
  /**
   * CPUs this node may use, in cores, may be fractional (a CPU quota below the machine's cores):
   * declared in the cluster configuration (nodes[].cpus) or read by the agent from its cgroup
   * (profilers/resource/cgroup-cpu.ts). Missing: no limit known. The mappers charge it
   * (Problem.nodes[].cpus).
   */
  cpuLimit?: number;
  /** Where cpuLimit came from: the configuration, or the agent's cgroup (in a container only its own is visible). */
  cpuLimitFrom?: 'declared' | 'cgroup';
  load1: number;
  freeMemBytes: number;
  /** ms since epoch */
  updatedAt: number;
}

/** Transfer time of a link: seconds = a*bytes^2 + b*bytes + c (DRUPE's quadratic, in our units). */
export interface LinkProfile {
  from: string;
  to: string;
  a: number;
  b: number;
  c: number;
  latencySec: number;
  bandwidthBytesPerSec: number;
  samples: number;
  updatedAt: number;
  /** Which model the fit ended up as (profilers/network/fit.ts): quadratic, linear or clamped. */
  model?: 'quadratic' | 'linear' | 'clamped';
  /** ms since epoch of the newest probe sample behind the fit. */
  sampledAt?: number;
  /** ms since epoch of the oldest sample behind the fit (the link's current regime starts no later). */
  windowFrom?: number;
}

export interface ExecProfile {
  app: string;
  task: string;
  node: string;
  durationSec: number;
  outputBytes: number;
  updatedAt: number;
  /**
   * What the measurement depended on: the task's script, its inputs' shape and, through its
   * parents' hashes, everything upstream down to the sample input. Equal hash, same measurement:
   * the execution profiler reuses it instead of running the task again.
   */
  inputsHash?: string;
}

/**
 * Measured control costs of a node, seconds (profilers/overhead/): what the mapper's model adds to
 * every task run and every hop besides the task's own time and the link's transfer time.
 */
export interface NodeOverhead {
  node: string;
  /** An empty hop through the queues (BullMQ job added -> taken by a worker on this node). */
  hopSec: number;
  /** A runner's work around one task call on this node: an empty invocation plus its Redis round trips. */
  invokeSec: number;
  /**
   * CPU seconds one no-op task costs through the real runner on this node (runner, Python worker
   * and Redis together; profilers/overhead/task-probe.ts). Absent where no Python task can run.
   */
  taskCpuSec?: number;
  /**
   * Seconds per byte a hop between two tasks on this node takes beyond the empty hop (`hopSec`) on
   * the direct data path: the output kept in the node's store, the arrive round trip, the copy into
   * the receiver's work folder (profilers/overhead/local-hop-probe.ts). Absent where not measured.
   */
  localHopSecPerByte?: number;
  /**
   * CPU seconds this node's runners spend per byte of a task's inputs and outputs on the direct
   * data path beyond a tiny item's (keeping an output in the store, copying an input into the work
   * folder; measured by the local hop probe, the tasks' own code left out). Absent where not measured.
   */
  runnerCpuSecPerByte?: number;
  /** Probes behind the medians. */
  samples: number;
  updatedAt: number;
}

export interface ProfileSnapshot {
  nodes: NodeResources[];
  /** Links between nodes. */
  links: LinkProfile[];
  /** The home's links to and from each node (`from` or `to` = `home`; profilers/overhead). */
  homeLinks?: LinkProfile[];
  exec: ExecProfile[];
  /** Measured control costs per node (absent in older profiles). */
  overheads?: NodeOverhead[];
  takenAt: number;
}

/** A task -> node placement. */
export type Mapping = Record<string, string>;
