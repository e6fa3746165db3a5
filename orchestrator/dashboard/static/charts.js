// Plain-SVG charts: the live throughput/makespan chart and the Gantt of the predicted schedule.
const NS = 'http://www.w3.org/2000/svg';

export function el(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

export function fmtSec(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  if (s < 1) return `${(s * 1000).toFixed(s < 0.01 ? 1 : 0)} ms`;
  if (s < 100) return `${s.toFixed(2)} s`;
  return `${s.toFixed(0)} s`;
}

/** One panel of a line chart: series = [{values: number[], color, label, dash?}]. */
function panel(svg, { x, y, w, h, title, series, times, unit, ref }) {
  const all = series.flatMap((s) => s.values.filter((v) => v !== null && Number.isFinite(v)));
  if (ref !== undefined && ref !== null) all.push(ref);
  const max = niceMax(Math.max(0, ...all) * 1.1);
  svg.append(el('text', { x, y: y - 6, class: 'chart-title' }, title));
  for (let i = 0; i <= 4; i++) {
    const gy = y + h - (h * i) / 4;
    svg.append(el('line', { x1: x, x2: x + w, y1: gy, y2: gy, class: 'grid' }));
    svg.append(el('text', { x: x - 6, y: gy + 3, class: 'axis', 'text-anchor': 'end' }, `${+(max * i / 4).toPrecision(3)}${i === 4 ? unit : ''}`));
  }
  const n = times.length;
  const t0 = times[0] ?? 0;
  const span = Math.max(1, (times[n - 1] ?? 0) - t0);
  const px = (i) => x + (n <= 1 ? w : ((times[i] - t0) / span) * w);
  const py = (v) => y + h - (Math.min(v, max) / max) * h;
  if (ref !== undefined && ref !== null) {
    svg.append(el('line', { x1: x, x2: x + w, y1: py(ref), y2: py(ref), class: 'ref-line' }));
    svg.append(el('text', { x: x + w - 4, y: py(ref) - 4, class: 'axis', 'text-anchor': 'end' }, `predicted ${fmtSec(ref)}`));
  }
  let lx = x + w;
  for (const s of [...series].reverse()) {
    const pts = [];
    s.values.forEach((v, i) => {
      if (v !== null && Number.isFinite(v)) pts.push(`${px(i).toFixed(1)},${py(v).toFixed(1)}`);
    });
    if (pts.length === 1) pts.push(pts[0].replace(/^[^,]*/, String(x + w)));
    if (pts.length > 0) svg.append(el('polyline', { points: pts.join(' '), fill: 'none', stroke: s.color, 'stroke-width': 2, 'stroke-dasharray': s.dash ?? '' }));
    const label = el('text', { x: lx, y: y - 6, class: 'legend', fill: s.color, 'text-anchor': 'end' }, s.label);
    svg.append(label);
    lx -= s.label.length * 6.6 + 14;
  }
}

/** history: [{ts, throughput, p50, p95}] */
export function renderChart(svg, history, predictedSec) {
  const box = svg.getBoundingClientRect();
  const W = Math.max(320, box.width || 600);
  const H = Math.max(220, box.height || 260);
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.replaceChildren();
  const times = history.map((p) => p.ts);
  const left = 56;
  const w = W - left - 12;
  const ph = (H - 70) / 2;
  panel(svg, {
    x: left, y: 22, w, h: ph, title: 'Throughput', unit: '/s', times,
    series: [{ values: history.map((p) => p.throughput), color: '#3fb950', label: 'items/s' }],
  });
  panel(svg, {
    x: left, y: 22 + ph + 36, w, h: ph, title: 'Makespan', unit: ' s', times, ref: predictedSec,
    series: [
      { values: history.map((p) => p.p50), color: '#58a6ff', label: 'p50' },
      { values: history.map((p) => p.p95), color: '#d29922', label: 'p95' },
    ],
  });
}

/** schedule: [{task, node, start, finish}] (seconds). */
export function renderGantt(svg, schedule, colorOf, makespanSec) {
  svg.replaceChildren();
  const nodes = [...new Set(schedule.map((s) => s.node))].sort();
  const box = svg.getBoundingClientRect();
  const W = Math.max(320, box.width || 600);
  const top = 20;
  const left = 78;
  // Rows share the panel's height (about as tall as the chart next to it) within limits.
  const rowH = Math.max(22, Math.min(52, Math.floor(220 / Math.max(1, nodes.length))));
  const H = Math.max(120, top + nodes.length * rowH + 30);
  svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  svg.setAttribute('height', String(H));
  if (schedule.length === 0) {
    svg.append(el('text', { x: 12, y: 30, class: 'axis' }, 'no predicted schedule published'));
    return;
  }
  const end = niceMax(Math.max(makespanSec ?? 0, ...schedule.map((s) => s.finish)));
  const w = W - left - 16;
  const px = (t) => left + (t / end) * w;
  for (let i = 0; i <= 5; i++) {
    const t = (end * i) / 5;
    svg.append(el('line', { x1: px(t), x2: px(t), y1: top - 4, y2: top + nodes.length * rowH, class: 'grid' }));
    svg.append(el('text', { x: px(t), y: top + nodes.length * rowH + 14, class: 'axis', 'text-anchor': 'middle' }, fmtSec(t)));
  }
  nodes.forEach((n, r) => {
    const y = top + r * rowH;
    svg.append(el('text', { x: left - 8, y: y + rowH / 2 + 4, class: 'gantt-node', 'text-anchor': 'end', fill: colorOf(n) }, n));
  });
  for (const s of schedule) {
    const r = nodes.indexOf(s.node);
    const y = top + r * rowH + 3;
    const x = px(s.start);
    const bw = Math.max(2, px(s.finish) - x);
    const g = el('g', { class: 'gantt-bar', 'data-task': s.task });
    g.append(el('rect', { x, y, width: bw, height: rowH - 6, rx: 3, fill: colorOf(s.node), 'fill-opacity': 0.75 }));
    const title = el('title', {}, `${s.task} on ${s.node}: ${fmtSec(s.start)} – ${fmtSec(s.finish)}`);
    g.append(title);
    if (bw > s.task.length * 5.8 + 6) g.append(el('text', { x: x + 4, y: y + rowH / 2 + 1, class: 'gantt-label' }, s.task));
    svg.append(g);
  }
  if (makespanSec) {
    svg.append(el('line', { x1: px(makespanSec), x2: px(makespanSec), y1: top - 6, y2: top + nodes.length * rowH, class: 'ref-line' }));
  }
}
