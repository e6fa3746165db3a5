// Whether a missing heartbeat means a lost node (heal/reconciler.ts). A heartbeat goes missing
// when its node is gone, and also when the home's own links go down: then every heartbeat
// expires, one after the other (each a lifetime after its own last beat), and once the links are
// back the agents return one after the other (each connection at its own pace). Neither the
// first ones to expire nor the last ones to come back are lost. So a missing node counts as lost
// only on the word of a witness: another node whose heartbeat has been live without a break for
// WITNESS_MS, and which has beaten since the missing one's heartbeat expired. While the home
// is cut off nothing beats (the witness rule's second half: the first heartbeats to expire
// during a cut made the others look lost, and the hub moved tasks in the middle of it); after it,
// the agents back first have not been live for long (the first half). A node really gone is
// still found within a beat of its heartbeat's expiry: the others beat all along.

/**
 * How long: after a 30 s cut of the home's links the testbed's agents came back more than one
 * heartbeat lifetime (7.5 s) apart on a loaded machine (a full test run beside it), and the first
 * one back made another look lost. It costs nothing while the nodes stay in touch; after an outage
 * of the home a node gone meanwhile is found this much later.
 */
export const WITNESS_MS = 30_000;

/** A heartbeat as the hub sees it (its clock): when it last landed in Redis, and when it expires. */
export interface Beat {
  at: number;
  expires: number;
}

/**
 * Beats that land within this long after a heartbeat's expiry do not vouch for its loss: the
 * times come from lifetimes read at different looks, a few milliseconds apart from the truth.
 */
export const BEAT_SLACK_MS = 100;

/** What the hub has seen of the nodes' heartbeats, look after look. */
export interface Liveness {
  /** Live nodes: since when (the hub's clock) each has been seen live without a break. */
  liveSince: Map<string, number>;
  /** Every node's last heartbeat seen. */
  last: Map<string, Beat>;
  /** Nodes seen before and missing now: the look that first saw each missing (the hub's clock). */
  missingSince: Map<string, number>;
}

export const newLiveness = (): Liveness => ({ liveSince: new Map(), last: new Map(), missingSince: new Map() });

/**
 * Record one look at the live nodes' heartbeats. `first`: the hub's first look that sees any
 * node: those are taken as live for long already (a hub that starts knows nothing of an outage
 * before it, and a node lost right after the start of a cluster must still be found at once).
 */
export function observeLive(s: Liveness, live: ReadonlyMap<string, Beat>, now: number, witnessMs: number, first = false): void {
  for (const n of s.liveSince.keys()) if (!live.has(n)) s.liveSince.delete(n);
  for (const n of s.last.keys()) if (!live.has(n) && !s.missingSince.has(n)) s.missingSince.set(n, now);
  for (const [n, beat] of live) {
    if (!s.liveSince.has(n)) s.liveSince.set(n, first ? now - witnessMs : now);
    s.last.set(n, beat);
    s.missingSince.delete(n);
  }
}

/**
 * Whether `node`, missing at the last look, counts as lost: some other node has been live for
 * `witnessMs` and beat after `node`'s heartbeat went (any live one will do for a node the hub
 * never saw). Went: when it expired, or when the hub first saw it missing if that was earlier (an
 * agent that stopped cleanly deleted its key before its lifetime was up). False for a live node.
 */
export function countsLost(s: Liveness, node: string, now: number, witnessMs: number): boolean {
  if (s.liveSince.has(node)) return false;
  const expired = Math.min(s.last.get(node)?.expires ?? -Infinity, s.missingSince.get(node) ?? Infinity);
  for (const [n, t] of s.liveSince) if (now - t >= witnessMs && s.last.get(n)!.at > expired + BEAT_SLACK_MS) return true;
  return false;
}
