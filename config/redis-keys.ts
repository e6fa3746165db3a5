// Every Redis key Jupiter writes is built here, under one prefix (default `jupiter:`),
// so that `jupiter teardown` and operators can find them. Pure functions, no I/O.
//
// Layout (P = prefix):
//   P node:<node>                      hash   agent registration (host, port, pid, startedAt); TTL = heartbeat
//   P nodes                            set    names of nodes that ever registered
//   P res:<node>                       hash   latest NodeResources (JSON field `json`)
//   P link:<from>:<to>:samples         list   capped probe samples (JSON {bytes, seconds, at})
//   P link:<from>:<to>:fit             string LinkProfile JSON
//   P link:<from>:<to>:transfers       list   capped real transfers from -> to (config/link-transfers.ts), newest first
//   P link:<from>:<to>:loss            list   capped echo-probe rounds (JSON {sent, lost, at}), newest first
//   P pair:<a>:<b>:probing             string owner of the probe running between a and b (a < b); PX
//   P exec:<app>:<node>:<task>         string ExecProfile JSON
//   P observed:<app>                   string AppCalibration JSON: what the app's tasks took in its removed
//                                             deployments against their profiles (profilers/models/calibration.ts); PX
//   P machine:<id>:timing              string the node timing task calls on machine <id> (execution profiler); PX
//   P overhead:<node>                  string NodeOverhead JSON (profilers/overhead: hop and invocation costs)
//   P link:<node>:home:fit, link:home:<node>:fit  the home's links (profilers/overhead)
//   P probe...                         the overhead probe's scratch queue and blob (removed after each probe)
//   P app:<app>:...                    everything of one deployed app (queues, joins, blobs, records, events)
//   P wave:<app>:...                   distributed WAVE messages of one mapping run
//   P apps                             set    names of apps that were ever deployed (telemetry discovery)
//   P app:<app>:events                 stream TaskEvent / ItemDoneEvent JSON (field `json`), capped
//   P app:<app>:finished               stream the ItemDoneEvents alone (field `json`), capped: what waiting clients read
//   P app:<app>:mapping                string MappingRecord JSON of the current deployment
//   P app:<app>:remaps                 list   re-mapping events (orchestrator/adapt), newest first, capped
//   P agent:<node>:inbox               list   requests to one agent (JSON messages: exec profiling,
//                                             WAVE assignments); the agent BLPOPs it
//   P reply:<id>                       list   replies to one request (agents RPUSH, requester BLPOPs); TTL
//   P agents:joined                    pub/sub channel: an agent that registers publishes its node name,
//                                             so running agents take it as a peer at once

export const DEFAULT_PREFIX = 'jupiter:';

export interface Keys {
  prefix: string;
  node(node: string): string;
  nodes(): string;
  resources(node: string): string;
  linkSamples(from: string, to: string): string;
  linkFit(from: string, to: string): string;
  /** Real transfers of the direct data path over a directed link (config/link-transfers.ts). */
  linkTransfers(from: string, to: string): string;
  /** Loss-probe rounds of a directed link (profilers/faults). */
  linkLoss(from: string, to: string): string;
  /** Held while a bandwidth probe runs between two hosts, in either direction (profilers/network). */
  pairProbe(a: string, b: string): string;
  exec(app: string, node: string, task: string): string;
  /** What the app's tasks took at runtime against their profiles, kept across deployments. */
  observed(app: string): string;
  /** Held while one node of the machine times a task's calls (profilers/agent/machine-turn.ts). */
  machineTiming(machine: string): string;
  /** NodeOverhead of one node (profilers/overhead). */
  overhead(node: string): string;
  /** Prefix of every key of one app (for teardown: SCAN `${app(app)}*`). */
  app(app: string): string;
  /** BullMQ prefix for the app's queues (queue names are task names). */
  queuePrefix(app: string): string;
  wave(app: string): string;
  /** Requests to one node agent (profilers/agent). */
  agentInbox(node: string): string;
  /** Replies to one request id. */
  reply(id: string): string;
  /** Pub/sub channel on which a starting agent announces itself (profilers/agent). */
  agentsJoined(): string;
  /** Set of deployed app names; the telemetry bridge also finds apps by SCAN. */
  apps(): string;
  /** Capped stream of the app's runtime events (config/events.ts), field `json`. */
  events(app: string): string;
  /** MappingRecord JSON (config/events.ts) of the app's current deployment. */
  mapping(app: string): string;
  /** Re-mapping events of the app (orchestrator/adapt/events.ts), newest first. */
  remaps(app: string): string;
}

export function redisKeys(prefix: string = DEFAULT_PREFIX): Keys {
  const p = prefix;
  return {
    prefix: p,
    node: (n) => `${p}node:${n}`,
    nodes: () => `${p}nodes`,
    resources: (n) => `${p}res:${n}`,
    linkSamples: (f, t) => `${p}link:${f}:${t}:samples`,
    linkFit: (f, t) => `${p}link:${f}:${t}:fit`,
    linkTransfers: (f, t) => `${p}link:${f}:${t}:transfers`,
    linkLoss: (f, t) => `${p}link:${f}:${t}:loss`,
    pairProbe: (a, b) => (a < b ? `${p}pair:${a}:${b}:probing` : `${p}pair:${b}:${a}:probing`),
    exec: (a, n, t) => `${p}exec:${a}:${n}:${t}`,
    observed: (a) => `${p}observed:${a}`,
    machineTiming: (m) => `${p}machine:${m}:timing`,
    overhead: (n) => `${p}overhead:${n}`,
    app: (a) => `${p}app:${a}:`,
    queuePrefix: (a) => `${p}app:${a}:q`,
    wave: (a) => `${p}wave:${a}:`,
    apps: () => `${p}apps`,
    events: (a) => `${p}app:${a}:events`,
    mapping: (a) => `${p}app:${a}:mapping`,
    remaps: (a) => `${p}app:${a}:remaps`,
    agentInbox: (n) => `${p}agent:${n}:inbox`,
    reply: (id) => `${p}reply:${id}`,
    agentsJoined: () => `${p}agents:joined`,
  };
}
