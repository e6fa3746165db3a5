// What a testbed looks like now: hosts (namespace, address, uplink, CPU limit, engine and whether
// it runs) and the pairs that differ from the uplink rule or have a fault.
import { HOME } from '../../config/types.js';
import { formatRate } from '../../config/testbed/topology.js';
import { renderTable } from '../report/table.js';
import { pairKey } from './faults.js';
import { ownsPid, type TestbedState } from './state.js';

export function renderHosts(state: TestbedState): string {
  return renderTable(['host', 'namespace', 'address', 'uplink', 'cpus', 'engine', 'state'], state.hosts.map((h) => {
    const rec = h.name === HOME ? state.redis : h.engine;
    return [
      h.name, h.ns, h.addr, formatRate(h.uplinkBps), h.cpus ?? '-',
      h.name === HOME ? `redis ${state.redis ? `${h.addr}:${state.redis.port}` : '-'}` : h.engine ? `unix://${h.engine.socket}` : '-',
      ownsPid(rec) ? 'running' : 'stopped',
    ];
  }));
}

export function renderLinks(state: TestbedState): string {
  const up = new Map(state.hosts.map((h) => [h.name, h.uplinkBps]));
  const rows: Array<Array<string | number>> = [];
  for (const a of state.hosts) {
    for (const b of state.hosts) {
      if (a === b) continue;
      const rate = state.rates[a.name]![b.name]!;
      const f = state.faults[pairKey(a.name, b.name)];
      const ruled = Math.min(up.get(a.name)!, up.get(b.name)!);
      if (rate === ruled && !f) continue;
      rows.push([`${a.name} -> ${b.name}`, formatRate(rate), f?.down ? 'down' : f?.lossPercent ? `${f.lossPercent}% loss` : '-']);
    }
  }
  const rule = 'other pairs: the slower uplink of the two, no fault';
  return rows.length ? `${renderTable(['pair', 'rate', 'fault'], rows)}\n${rule}` : `every pair: the slower uplink of the two, no fault`;
}
