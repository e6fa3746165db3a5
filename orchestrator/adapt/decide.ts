// When to act on a re-mapping plan: the gain must pass the threshold for the whole hold time
// (a short blip in the models is not worth a move), a lost node acts at once, and after a
// re-map nothing happens for another hold time (no flapping between two near-equal mappings).
// Pure: the loop keeps the state and passes it back in.
import type { AdaptSettings } from '../../config/types.js';

export interface DecisionState {
  /** Since when the gain has been above the threshold (ms), if it is. */
  aboveSince?: number;
  /** When the last re-map (or suggestion) was made (ms). */
  lastActAt?: number;
  /** The mapping last suggested, so the same suggestion is not repeated. */
  lastSuggested?: string;
}

export type Verdict = { act: false; why: string } | { act: true; why: string; urgent: boolean };

export function decide(settings: AdaptSettings, state: DecisionState, plan: { gain: number; lostNodes: string[]; after: { mapping: Record<string, string> } }, now: number): { verdict: Verdict; state: DecisionState } {
  if (settings.mode === 'off') return { verdict: { act: false, why: 'adapt is off' }, state: {} };
  const key = JSON.stringify(Object.entries(plan.after.mapping).sort());
  if (plan.lostNodes.length > 0) return { verdict: { act: true, urgent: true, why: `lost node(s): ${plan.lostNodes.join(', ')}` }, state: { lastActAt: now, lastSuggested: key } };
  if (plan.gain <= settings.threshold) return { verdict: { act: false, why: `predicted gain ${(plan.gain * 100).toFixed(1)}% is under the threshold ${(settings.threshold * 100).toFixed(0)}%` }, state: { ...state, aboveSince: undefined } };
  const aboveSince = state.aboveSince ?? now;
  const holdMs = settings.holdSec * 1000;
  if (state.lastActAt !== undefined && now - state.lastActAt < holdMs) return { verdict: { act: false, why: 'a re-map was made less than a hold time ago' }, state: { ...state, aboveSince } };
  if (now - aboveSince < holdMs) return { verdict: { act: false, why: `gain above the threshold for ${((now - aboveSince) / 1000).toFixed(0)} of ${settings.holdSec} s` }, state: { ...state, aboveSince } };
  if (state.lastSuggested === key && settings.mode === 'suggest') return { verdict: { act: false, why: 'already suggested' }, state: { ...state, aboveSince } };
  return { verdict: { act: true, urgent: false, why: `predicted gain ${(plan.gain * 100).toFixed(1)}% above ${(settings.threshold * 100).toFixed(0)}% for ${settings.holdSec} s` }, state: { aboveSince: undefined, lastActAt: now, lastSuggested: key } };
}
