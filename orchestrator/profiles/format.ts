// Tables of `jupiter profile`: live nodes, the link matrix, execution profiles per app.
import { table as newTable } from '../report/table.js';
import type { ProfileView } from './read.js';


export function fmtBytes(b: number): string {
  if (b < 1024) return `${b} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = b / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function fmtAge(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  return s < 120 ? `${s.toFixed(1)} s` : s < 7200 ? `${(s / 60).toFixed(1)} min` : `${(s / 3600).toFixed(1)} h`;
}

export function fmtRate(bytesPerSec: number): string {
  const mbit = (bytesPerSec * 8) / 1e6;
  return mbit >= 1e5 ? '> 100 Gbit/s' : mbit >= 1000 ? `${(mbit / 1000).toFixed(2)} Gbit/s` : `${mbit.toFixed(mbit < 10 ? 2 : 1)} Mbit/s`;
}

const fmtLoss = (r: number): string => `${(r * 100).toFixed(r > 0 && r < 0.1 ? 1 : 0)} %`;

/** The faults localised from echo-probe loss: a lossy or dead link (or node), with its loss rate. */
function formatFaults(view: ProfileView): string[] {
  const { faults, paths } = view.health;
  if (paths.length === 0) return [];
  if (faults.length === 0) return [`Network faults: none (echo probes on ${paths.length} directed links)`, ''];
  const t = newTable(['fault', 'where', 'loss', 'state', 'lossy paths', 'could also be']);
  for (const f of faults) {
    t.push([f.kind, f.kind === 'link' ? f.nodes.join(' <-> ') : f.nodes.join(', ') || f.element, fmtLoss(f.loss), f.dead ? 'DEAD' : 'lossy', f.paths, f.ambiguousWith.join(', ') || '-']);
  }
  return [`Network faults (${faults.length}), from echo-probe loss of the last minute`, t.toString(), ''];
}

/** Measured control costs per node and the node's links with the home (profilers/overhead). */
function formatOverheads(view: ProfileView, now: number): string[] {
  const { overheads = [], homeLinks = [] } = view.snapshot;
  if (overheads.length === 0 && homeLinks.length === 0) return [];
  const link = (from: string, to: string): string => {
    const l = homeLinks.find((x) => x.from === from && x.to === to);
    return l ? `${(l.latencySec * 1000).toFixed(2)} ms + ${fmtRate(l.bandwidthBytesPerSec)}` : '-';
  };
  const t = newTable(['node', 'hop (empty)', 'invocation (empty)', 'task CPU (real runner)', 'same-node hop per MiB', 'runner CPU per MiB', 'home -> node', 'node -> home', 'age']);
  for (const a of view.agents) {
    const o = overheads.find((x) => x.node === a.node);
    t.push([a.node, o ? `${(o.hopSec * 1000).toFixed(2)} ms` : '-', o ? `${(o.invokeSec * 1000).toFixed(2)} ms` : '-', o?.taskCpuSec !== undefined ? `${(o.taskCpuSec * 1000).toFixed(2)} ms` : '-', o?.localHopSecPerByte !== undefined ? `${(o.localHopSecPerByte * 2 ** 20 * 1000).toFixed(2)} ms` : '-', o?.runnerCpuSecPerByte !== undefined ? `${(o.runnerCpuSecPerByte * 2 ** 20 * 1000).toFixed(2)} ms` : '-', link('home', a.node), link(a.node, 'home'), o ? fmtAge(now - o.updatedAt) : '-']);
  }
  return ['Control costs the mapper adds per hop and per task, and the home\'s links (measured by each agent)', t.toString(), ''];
}

const sci = (x: number) => (x === 0 ? '0' : x.toExponential(3));

export function formatProfileView(view: ProfileView, now = Date.now()): string {
  const { agents, snapshot } = view;
  const out: string[] = [];
  if (agents.length === 0) return 'No live agents. Start one per node with `jupiter agent --node <name>` (the embedded stack starts them for `jupiter deploy`).\n';
  const res = new Map(snapshot.nodes.map((n) => [n.node, n]));
  const nodes = newTable(['node', 'address', 'CPU % (mean)', 'memory % (mean)', 'cores', 'load 1 min', 'free memory', 'heartbeat age']);
  for (const a of agents) {
    const r = res.get(a.node);
    nodes.push([
      a.node,
      `${a.host}:${a.port}`,
      r ? `${r.cpuPercent.toFixed(1)} (${r.cpuMean.toFixed(1)})` : '-',
      r ? `${r.memPercent.toFixed(1)} (${r.memMean.toFixed(1)})` : '-',
      r ? r.cores : '-',
      r ? r.load1.toFixed(2) : '-',
      r ? fmtBytes(r.freeMemBytes) : '-',
      fmtAge(now - a.heartbeatAt),
    ]);
  }
  out.push(`Live nodes (${agents.length})`, nodes.toString(), '');

  const links = newTable(['link', 'latency', 'bandwidth', 'a (s/B²)', 'b (s/B)', 'c (s)', 'model', 'samples', 'age', 'loss']);
  const loss = new Map(view.health.paths.map((p) => [`${p.from} -> ${p.to}`, p]));
  for (const l of [...snapshot.links].sort((p, q) => p.from.localeCompare(q.from) || p.to.localeCompare(q.to))) {
    const pl = loss.get(`${l.from} -> ${l.to}`);
    links.push([`${l.from} -> ${l.to}`, `${(l.latencySec * 1000).toFixed(2)} ms`, fmtRate(l.bandwidthBytesPerSec), sci(l.a), sci(l.b), sci(l.c), l.model ?? '-', l.samples, fmtAge(now - l.updatedAt), pl ? fmtLoss(pl.lost / pl.sent) : '-']);
  }
  const have = new Set(snapshot.links.map((l) => `${l.from} -> ${l.to}`));
  const missing = agents.flatMap((f) => agents.filter((t) => t !== f).map((t) => `${f.node} -> ${t.node}`)).filter((k) => !have.has(k));
  out.push(`Links (seconds = a·bytes² + b·bytes + c): ${snapshot.links.length} fitted${missing.length ? `, ${missing.length} not yet: ${missing.join(', ')}` : ''}`);
  if (snapshot.links.length > 0) out.push(links.toString());
  out.push('');
  out.push(...formatOverheads(view, now));
  out.push(...formatFaults(view));

  const apps = [...new Set(snapshot.exec.map((e) => e.app))].sort();
  if (apps.length === 0) out.push('Execution profiles: none (run `jupiter profile exec <app>`)');
  for (const app of apps) {
    const rows = snapshot.exec.filter((e) => e.app === app);
    const nodeNames = [...new Set(rows.map((e) => e.node))].sort();
    const tasks = [...new Set(rows.map((e) => e.task))];
    const t = newTable(['task', ...nodeNames.map((n) => `${n}: time / output`)]);
    for (const task of tasks) {
      t.push([task, ...nodeNames.map((n) => {
        const e = rows.find((r) => r.task === task && r.node === n);
        return e ? `${(e.durationSec * 1000).toFixed(1)} ms / ${fmtBytes(e.outputBytes)}` : '-';
      })]);
    }
    const newest = Math.max(...rows.map((r) => r.updatedAt));
    out.push(`Execution profile of ${app} (age ${fmtAge(now - newest)})`, t.toString(), '');
  }
  return `${out.join('\n')}\n`;
}
