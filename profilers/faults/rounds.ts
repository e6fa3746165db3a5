// Pooling the echo-probe rounds of each directed link into one path observation for
// localise.ts: the rounds of the last `windowMs` count (a fault older than that is forgotten as
// soon as clean rounds replace it). Pure, no I/O.
import type { PathObservation } from './localise.js';

/** One loss-probe round of a directed link, as stored in `link:<from>:<to>:loss`. */
export interface LossRound {
  sent: number;
  lost: number;
  /** ms since epoch */
  at: number;
}

export const DEFAULT_LOSS_WINDOW_MS = 60_000;

export function pathObservations(rounds: Array<{ from: string; to: string; rounds: LossRound[] }>, now: number, windowMs = DEFAULT_LOSS_WINDOW_MS): PathObservation[] {
  return rounds
    .map(({ from, to, rounds: rs }) => {
      const recent = rs.filter((r) => now - r.at <= windowMs && r.sent > 0);
      return { from, to, sent: recent.reduce((s, r) => s + r.sent, 0), lost: recent.reduce((s, r) => s + Math.min(r.lost, r.sent), 0) };
    })
    .filter((o) => o.sent > 0);
}
