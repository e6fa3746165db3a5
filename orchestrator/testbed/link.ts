// `jupiter testbed link <a> <b> ...`: change a pair live. A rate changes the htb classes of both
// directions (or one with oneWay); down/up/loss rewrite the iptables chains of both senders.
import { inputError } from '../../config/errors.js';
import { formatRate, parseRate } from '../../config/testbed/topology.js';
import { hostOf } from './plan.js';
import { setRate } from './shaping.js';
import { applyFaults, pairKey } from './faults.js';
import { writeTestbedState, type TestbedState } from './state.js';

export interface LinkChange {
  rate?: string;
  down?: boolean;
  up?: boolean;
  loss?: string;
  oneWay?: boolean;
}

function parseLoss(text: string): number {
  const m = /^(\d+(?:\.\d+)?)%?$/.exec(text.trim());
  const v = m ? Number(m[1]) : NaN;
  if (!(v >= 0 && v <= 100)) throw inputError(`--loss must be a percentage from 0 to 100, got ${JSON.stringify(text)}`, { hint: 'e.g. --loss 10% (0% removes the loss)' });
  return v;
}

/** Apply the change; returns one line per direction changed. */
export function changeLink(dir: string, state: TestbedState, a: string, b: string, change: LinkChange): string[] {
  const [ha, hb] = [hostOf(state, a), hostOf(state, b)];
  if (ha === hb) throw inputError(`${a} - ${b}: a link joins two different hosts`);
  const given = [change.rate !== undefined, Boolean(change.down), Boolean(change.up), change.loss !== undefined].filter(Boolean).length;
  if (given !== 1) throw inputError('give exactly one of --rate, --down, --up, --loss', { hint: 'e.g. `jupiter testbed link edge1 fog1 --rate 5mbit`' });
  const rate = change.rate !== undefined ? parseRate(change.rate) : undefined;
  if (change.rate !== undefined && rate === undefined) throw inputError(`--rate ${JSON.stringify(change.rate)} is not a rate`, { hint: 'e.g. 500kbit, 5mbit, 1gbit (8kbit to 100gbit)' });
  const loss = change.loss !== undefined ? parseLoss(change.loss) : undefined;
  const pairs = change.oneWay ? [[ha, hb]] : [[ha, hb], [hb, ha]];
  const out: string[] = [];
  for (const [from, to] of pairs as Array<[typeof ha, typeof hb]>) {
    const key = pairKey(from.name, to.name);
    if (rate !== undefined) {
      setRate(state, from, to, rate);
      out.push(`${from.name} -> ${to.name}: rate ${formatRate(rate)}`);
      continue;
    }
    const f = { ...state.faults[key] };
    if (change.down) f.down = true;
    if (change.up) delete f.down;
    if (loss !== undefined) {
      if (loss > 0) f.lossPercent = loss;
      else delete f.lossPercent;
    }
    if (f.down || f.lossPercent) state.faults[key] = f;
    else delete state.faults[key];
    applyFaults(state, from);
    out.push(`${from.name} -> ${to.name}: ${f.down ? 'down' : 'up'}${f.lossPercent ? `, ${f.lossPercent}% loss` : ''}`);
  }
  writeTestbedState(dir, state);
  return out;
}
