// Whether a missing heartbeat can mean a lost node (heal/reconciler.ts). Only while another node
// has been live, without a break, for at least one heartbeat lifetime: when the home's own links
// go down, every heartbeat expires together, and once they are back the agents return one after
// the other (each connection at its own pace), so the first ones back must not make the late ones
// look lost. A node that is really gone is still found as soon as its heartbeat expires: the
// others have been live all along.

/**
 * Record this look at the live nodes in `since` (node -> when the hub first saw it live without a
 * break since; the hub's clock) and say whether some node has been live for `witnessMs` at least.
 */
export function observeLive(since: Map<string, number>, live: ReadonlySet<string>, now: number, witnessMs: number): boolean {
  for (const n of since.keys()) if (!live.has(n)) since.delete(n);
  for (const n of live) if (!since.has(n)) since.set(n, now);
  for (const t of since.values()) if (now - t >= witnessMs) return true;
  return false;
}
