// Whether a missing heartbeat can mean a lost node (heal/reconciler.ts). Only while another node
// has been live, without a break, for a while (WITNESS_MS): when the home's own links
// go down, every heartbeat expires together, and once they are back the agents return one after
// the other (each connection at its own pace), so the first ones back must not make the late ones
// look lost. A node that is really gone is still found as soon as its heartbeat expires: the
// others have been live all along.

/**
 * How long: after a 30 s cut of the home's links the testbed's agents came back more than one
 * heartbeat lifetime (7.5 s) apart on a loaded machine (a full test run beside it), and the first
 * one back made another look lost. It costs nothing while the nodes stay in touch; after an outage
 * of the home a node gone meanwhile is found this much later.
 */
export const WITNESS_MS = 30_000;

/**
 * Record this look at the live nodes in `since` (node -> when the hub first saw it live without a
 * break since; the hub's clock) and say whether some node has been live for `witnessMs` at least.
 * `first`: the hub's first look that sees any node: those are taken as live for long already (a
 * hub that starts knows nothing of an outage before it, and a node lost right after the start of a
 * cluster must still be found at once).
 */
export function observeLive(since: Map<string, number>, live: ReadonlySet<string>, now: number, witnessMs: number, first = false): boolean {
  for (const n of since.keys()) if (!live.has(n)) since.delete(n);
  for (const n of live) if (!since.has(n)) since.set(n, first ? now - witnessMs : now);
  for (const t of since.values()) if (now - t >= witnessMs) return true;
  return false;
}
