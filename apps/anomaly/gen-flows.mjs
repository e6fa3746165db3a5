// Writes sample_input/<n>flows.csv: five minutes of synthetic network flow records per file, with
// a few planted anomalies, and expected.json (what the pipeline must find). Deterministic: a seeded
// generator, so running it again gives the same files. Run: node apps/anomaly/gen-flows.mjs
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const BASE_TS = 1_700_000_000; // seconds
const WINDOW = 300;
const HOSTS = Array.from({ length: 40 }, (_, i) => `10.1.0.${i + 1}`);
const SERVERS = [
  ['172.16.0.5', 80], ['172.16.0.5', 443], ['172.16.0.8', 443], ['172.16.0.9', 53], ['172.16.0.12', 22],
  ['172.16.0.20', 3306], ['172.16.0.21', 5432], ['198.51.100.7', 443], ['198.51.100.9', 443], ['192.0.2.44', 80],
];

function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function normal(r) {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

function flow(ts, src, dst, port, bytes, durationMs, proto = 'tcp') {
  const packets = Math.max(1, Math.round(bytes / 1200));
  return [ts.toFixed(3), src, dst, port, proto, Math.round(bytes), packets, Math.round(durationMs)];
}

function background(r, n) {
  const rows = [];
  for (let i = 0; i < n; i++) {
    const [dst, port] = SERVERS[Math.floor(r() * SERVERS.length)];
    const bytes = Math.exp(Math.log(8000) + 0.9 * normal(r)); // log-normal around 8 kB
    rows.push(flow(BASE_TS + r() * WINDOW, HOSTS[Math.floor(r() * HOSTS.length)], dst, port, bytes, 5 + r() * 1500, port === 53 ? 'udp' : 'tcp'));
  }
  return rows;
}

const plants = {
  portScan: (r, src) => {
    const start = BASE_TS + 60 + r() * 100;
    return Array.from({ length: 180 }, (_, i) => flow(start + i * 0.1, src, '172.16.0.12', 1000 + i * 7, 60, 1));
  },
  exfiltration: (r, src) => [flow(BASE_TS + 30 + r() * 200, src, '203.0.113.50', 443, 48_000_000 + r() * 4_000_000, 95_000)],
  flood: (r, src) => {
    const start = BASE_TS + 100 + r() * 100;
    return Array.from({ length: 300 }, (_, i) => flow(start + i * 0.02, src, '172.16.0.5', 80, 120, 2));
  },
};

// file -> planted anomalies (type, source address)
const FILES = {
  '1flows.csv': [['port_scan', '10.9.0.66']],
  '2flows.csv': [['exfiltration', '10.1.0.17']],
  '3flows.csv': [['flood', '10.7.7.7']],
  '4flows.csv': [['port_scan', '10.9.0.13'], ['exfiltration', '10.1.0.23']],
  '5flows.csv': [],
};
const PLANT = { port_scan: plants.portScan, exfiltration: plants.exfiltration, flood: plants.flood };

const expected = {};
mkdirSync(join(here, 'sample_input'), { recursive: true });
Object.entries(FILES).forEach(([name, planted], k) => {
  const r = rng(1000 + k);
  const rows = background(r, 1200);
  for (const [type, src] of planted) rows.push(...PLANT[type](r, src));
  rows.sort((a, b) => Number(a[0]) - Number(b[0]));
  const csv = ['ts,src_ip,dst_ip,dst_port,proto,bytes,packets,duration_ms', ...rows.map((row) => row.join(','))].join('\n') + '\n';
  writeFileSync(join(here, 'sample_input', name), csv);
  expected[name.replace(/\..*$/, '')] = { flows: rows.length, anomalies: planted.map(([type, src]) => ({ type, src_ip: src })) };
});
writeFileSync(join(here, 'expected.json'), JSON.stringify(expected, null, 2) + '\n');
