// Real transfers as link evidence. The direct data path (circe/dataplane) fetches outputs node to
// node and knows each transfer's bytes and seconds; the receiving side records them in a short
// list per directed link (redis-keys.ts linkTransfers(from, to)), and the sending node's agent
// (profilers/network) fits that link from its probes and these. A probe of a saturated link waits
// out its timeout, while the stream's own transfers show the change as soon as one completes.

/** One transfer, stored as JSON, newest first. */
export interface LinkTransfer {
  bytes: number;
  /** The transfer itself: request to last byte, after any wait for a free lane. */
  seconds: number;
  /** End of the transfer, ms since epoch. */
  at: number;
}

/** Transfers kept per directed link: the window needs a few of one size, the fit three. */
export const LINK_TRANSFERS_KEPT = 16;
/**
 * Smaller transfers are not recorded: their time is request overhead, not bandwidth, and a
 * pipeline of small items would pay a Redis write per item for nothing.
 */
export const LINK_TRANSFER_MIN_BYTES = 64 * 1024;
