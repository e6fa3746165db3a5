// Every Redis key Jupiter writes is built here, under one prefix (default `jupiter:`),
// so that `jupiter teardown` and operators can find them. Pure functions, no I/O.
//
// Layout (P = prefix):
//   P node:<node>                      hash   agent registration (host, port, pid, startedAt); TTL = heartbeat
//   P nodes                            set    names of nodes that ever registered
//   P res:<node>                       hash   latest NodeResources (JSON field `json`)
//   P link:<from>:<to>:samples         list   capped probe samples (JSON {bytes, seconds, at})
//   P link:<from>:<to>:fit             string LinkProfile JSON
//   P exec:<app>:<node>:<task>         string ExecProfile JSON
//   P app:<app>:...                    everything of one deployed app (queues, joins, blobs, records, events)
//   P wave:<app>:...                   distributed WAVE messages of one mapping run

export const DEFAULT_PREFIX = 'jupiter:';

export interface Keys {
  prefix: string;
  node(node: string): string;
  nodes(): string;
  resources(node: string): string;
  linkSamples(from: string, to: string): string;
  linkFit(from: string, to: string): string;
  exec(app: string, node: string, task: string): string;
  /** Prefix of every key of one app (for teardown: SCAN `${app(app)}*`). */
  app(app: string): string;
  /** BullMQ prefix for the app's queues (queue names are task names). */
  queuePrefix(app: string): string;
  wave(app: string): string;
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
    exec: (a, n, t) => `${p}exec:${a}:${n}:${t}`,
    app: (a) => `${p}app:${a}:`,
    queuePrefix: (a) => `${p}app:${a}:q`,
    wave: (a) => `${p}wave:${a}:`,
  };
}
