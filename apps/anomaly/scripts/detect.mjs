// detect: the three per-shard detectors run the same script (one taskname_map entry each). A shard
// holds every flow of its source addresses, so per-source statistics are exact. Three detectors:
//   port_scan    - one source touching many distinct ports of one destination;
//   flood        - one source sending a burst of flows to one destination port (sliding 10 s window);
//   exfiltration - a flow whose size is an extreme robust z-score outlier (log bytes) and over 1 MB.
// The output is a JSON list of findings with the evidence, for the fusion task.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { inputPaths, robustZ } from './flowlib.mjs';

export const THRESHOLDS = {
  scanDistinctPorts: 50,
  floodWindowSec: 10,
  floodFlows: 100,
  exfilZ: 6,
  exfilMinBytes: 1_000_000,
};

function groupBy(rows, key) {
  const m = new Map();
  for (const r of rows) {
    const k = key(r);
    const list = m.get(k);
    if (list) list.push(r);
    else m.set(k, [r]);
  }
  return m;
}

function portScans(flows) {
  const found = [];
  for (const [k, rows] of groupBy(flows, (f) => `${f.src_ip} ${f.dst_ip}`)) {
    const ports = new Set(rows.map((f) => f.dst_port));
    if (ports.size >= THRESHOLDS.scanDistinctPorts) {
      const [src, dst] = k.split(' ');
      found.push({ type: 'port_scan', src_ip: src, dst_ip: dst, score: ports.size, detail: `${ports.size} distinct ports of ${dst}` });
    }
  }
  return found;
}

function floods(flows) {
  const found = [];
  for (const [k, rows] of groupBy(flows, (f) => `${f.src_ip} ${f.dst_ip} ${f.dst_port}`)) {
    if (rows.length < THRESHOLDS.floodFlows) continue;
    const ts = rows.map((f) => f.ts).sort((a, b) => a - b);
    let best = 0;
    for (let i = 0, j = 0; j < ts.length; j++) {
      while (ts[j] - ts[i] > THRESHOLDS.floodWindowSec) i++;
      best = Math.max(best, j - i + 1);
    }
    if (best >= THRESHOLDS.floodFlows) {
      const [src, dst, port] = k.split(' ');
      found.push({ type: 'flood', src_ip: src, dst_ip: dst, score: best, detail: `${best} flows to ${dst}:${port} within ${THRESHOLDS.floodWindowSec} s` });
    }
  }
  return found;
}

function exfiltration(flows) {
  const z = robustZ(flows.map((f) => Math.log(1 + f.bytes)));
  const found = [];
  flows.forEach((f, i) => {
    if (z[i] >= THRESHOLDS.exfilZ && f.bytes >= THRESHOLDS.exfilMinBytes) {
      found.push({ type: 'exfiltration', src_ip: f.src_ip, dst_ip: f.dst_ip, score: Number(z[i].toFixed(2)), detail: `${f.bytes} bytes to ${f.dst_ip}:${f.dst_port} (robust z ${z[i].toFixed(1)})` });
    }
  });
  return found;
}

export async function task(inputs, pathin, pathout) {
  const [file] = inputPaths(inputs, pathin);
  const shard = JSON.parse(await readFile(file, 'utf8'));
  const anomalies = [...portScans(shard.flows), ...floods(shard.flows), ...exfiltration(shard.flows)];
  await mkdir(pathout, { recursive: true });
  const out = join(pathout, `${shard.job}_shard${shard.shard}_anomalies.json`);
  const { flows, ...meta } = shard;
  await writeFile(out, JSON.stringify({ ...meta, flows: flows.length, sources: new Set(flows.map((f) => f.src_ip)).size, anomalies }));
  return [out];
}
