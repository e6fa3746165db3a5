// Keys of one deployed app, all under redisKeys(prefix).app(app) so teardown finds every one
// with a single SCAN. A = `<prefix>app:<app>:`.
//   A q:<task>:...            BullMQ queues (prefix A q, queue name = task; `home` is the sink queue)
//   A settings                hash    pipeline settings (attempts, limits, ...) read by every runner
//   A blob:<id>               string  bytes of one file (binary, never base64)
//   A blob:<id>:h             set     delivery ids still holding the blob; the blob goes when it empties
//   A queued:<task>           set     delivery ids sent to the task (or `home`) and not yet finished
//                                     there: the task's depth in items, whatever the job bundling
//   A join:<task>:<item>      hash    inputs of a join collected so far (delivery id -> JSON input)
//   A joins:<item>            hash    joins of the item waiting for files (join key -> JSON meta):
//                                     left non-empty when the item ends = dead letters
//   A done:<task>:<item>      string  marker: task ran for item (expires; suppresses redeliveries)
//   A pending:<item>          set     delivery ids of the item still in flight (empty = item finished)
//   A item:<item>             hash    enteredAt, file, runId, lastOutputAt, doneAt, makespanMs, failed
//   A out:<item>              set     output files delivered at the sink, as named in the output folder (exactly-once dedup)
//   A rt:<item>               hash    runtime records `<task>|enter|start|finish|node|file|in` (in: input bytes)
//   A items                   zset    item ids by entry time (bounded; oldest records trimmed)
//   A makespans               list    recent makespans in ms (bounded)
//   A stats                   hash    counters: processed:<task>, failed:<task>, retried:<task>, ...
//   A deadletters             list    JSON dead-letter records (bounded)
//   A events                  stream  TaskEvent / ItemDoneEvent (config/events.ts), capped
//   A finished                stream  the ItemDoneEvents alone, capped (circe/home/wait.ts reads it)
//   A helper:<task>           hash    exit code and time of a non-DAG helper run
//   A owners                  hash    plain output path at the sink -> item that wrote it first
//                                     (outputPath: kept here so that a restarted sink knows it);
//                                     `item:<id>` -> the paths that item owns, one a line (trimmed
//                                     with the item's records, so the hash stays bounded)
//   A datatoken               string  the deployment's data token (direct data path, circe/dataplane;
//                                     not under data: so that a node may be named "token")
//   A data:<node>             hash    data endpoints (host:port -> registered at) of the node's runners
//   A moving                  string  JSON of the moves of a live re-map under way (orchestrator/adapt/move.ts;
//                                     expires): a runner leaving a node serves what it stored until taken
//   A blob:<id>:l             string  lineage of a blob kept on a node (direct path, circe/dataplane/lineage.ts)
//   A blob:<id>:r             string  a re-run of the blob's producer was asked (expires)
//   A rerun:<task>            list    re-run requests for the task (JSON {blob, why, at})
//   A ready                   hash    task -> JSON {node, pid, at}: the runner consumes its queue (deploy waits for all)
//   A placement               hash    task -> node, written with every mapping record (deploy, repair, re-map):
//                                     a runner its task moved away from stops (circe/fence)
import { redisKeys } from '../../config/redis-keys.js';

export const SINK_QUEUE = 'home';

export interface AppKeys {
  app: string;
  base: string;
  queuePrefix: string;
  settings: string;
  /** blob('') is the prefix the Lua scripts derive blob keys from. */
  blob(id: string): string;
  blobHolders(id: string): string;
  /** queued('') is the prefix the Lua scripts derive receivers' keys from. */
  queued(task: string): string;
  join(task: string, item: string): string;
  joins(item: string): string;
  done(task: string, item: string): string;
  pending(item: string): string;
  item(item: string): string;
  out(item: string): string;
  rt(item: string): string;
  items: string;
  makespans: string;
  stats: string;
  deadLetters: string;
  events: string;
  /** Item-done events alone (the scripts' finish_item appends each to `events` and here). */
  finished: string;
  helper(task: string): string;
  owners: string;
  ready: string;
  placement: string;
  dataToken: string;
  dataNodes(node: string): string;
  /** Where a node's stores are (machine, folder), for receivers on the same machine (plane.ts). */
  dataDirs(node: string): string;
  /** Since when nothing has served on a live node, as a receiver found it (plane.ts UNSERVED_MS), shared by the receivers. */
  unserved(node: string): string;
  moving: string;
  /** The agent's heartbeat key of a node, and the set of nodes that ever registered (liveness, outside A). */
  agent(node: string): string;
  agents: string;
  /** Real transfers over a directed link, recorded for the link's profile (outside A: the agents read it). */
  linkTransfers(from: string, to: string): string;
}

export function appKeys(prefix: string, app: string): AppKeys {
  const k = redisKeys(prefix);
  const a = k.app(app);
  return {
    app,
    base: a,
    queuePrefix: k.queuePrefix(app),
    settings: `${a}settings`,
    blob: (id) => `${a}blob:${id}`,
    blobHolders: (id) => `${a}blob:${id}:h`,
    queued: (t) => `${a}queued:${t}`,
    join: (t, i) => `${a}join:${t}:${i}`,
    joins: (i) => `${a}joins:${i}`,
    done: (t, i) => `${a}done:${t}:${i}`,
    pending: (i) => `${a}pending:${i}`,
    item: (i) => `${a}item:${i}`,
    out: (i) => `${a}out:${i}`,
    rt: (i) => `${a}rt:${i}`,
    items: `${a}items`,
    makespans: `${a}makespans`,
    stats: `${a}stats`,
    deadLetters: `${a}deadletters`,
    events: `${a}events`,
    finished: `${a}finished`,
    helper: (t) => `${a}helper:${t}`,
    owners: `${a}owners`,
    ready: `${a}ready`,
    placement: `${a}placement`,
    dataToken: `${a}datatoken`,
    dataNodes: (n) => `${a}data:${n}`,
    dataDirs: (n) => `${a}datadir:${n}`,
    unserved: (n) => `${a}unserved:${n}`,
    moving: `${a}moving`,
    agent: (n) => k.node(n),
    agents: k.nodes(),
    linkTransfers: (f, t) => k.linkTransfers(f, t),
  };
}

/** One of BullMQ's keys of a queue (its layout: `<queuePrefix>:<queue>:<type>`; a job's hash is `<type>` = its id). */
export function bullKey(k: AppKeys, queue: string, type: string): string {
  return `${k.queuePrefix}:${queue}:${type}`;
}

/** BullMQ's keys of a queue that QUIET (scripts.ts) reads: its wait list, prioritized set and wake-up marker. */
export function quietKeys(k: AppKeys, queue: string): [string, string, string] {
  return [bullKey(k, queue, 'wait'), bullKey(k, queue, 'prioritized'), bullKey(k, queue, 'marker')];
}
