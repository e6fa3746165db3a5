// The Jupiter dashboard: one page, fed only by the dashboard server's /live WebSocket, which
// relays the MQTT telemetry (the page never talks to the broker, so it holds no broker credential,
// and never polls). Messages update a model; the DOM is updated at most once per animation frame,
// and only for what changed, so bursts of events on 200-task DAGs do not freeze the page.
import { layeredLayout } from './layout.js';
import { renderChart, renderGantt, el, fmtSec } from './charts.js';

const PALETTE = ['#58a6ff', '#f0883e', '#3fb950', '#db61a2', '#a371f7', '#2dd4bf', '#e3b341', '#ff7b72', '#8b949e', '#79c0ff', '#d2a8ff', '#56d364'];
const HISTORY = 180;

const model = {
  app: '',
  mappings: new Map(), // app -> MappingMessage
  tasks: new Map(), // task -> TaskMessage (last event)
  stats: null,
  nodes: new Map(), // node -> NodeMessage
  faults: null, // FaultsMessage (jupiter/network/faults)
  remap: null, // newest RemapEvent of the app (jupiter/<app>/remap)
  history: [],
  messages: 0,
  nodeOrder: [],
};
const dirty = { apps: false, graph: false, tasks: new Set(), stats: false, nodes: false };
const view = { taskEls: new Map(), rows: new Map(), chips: new Map(), cards: new Map() };
let frame = 0;
let socket;

const $ = (id) => document.getElementById(id);
const colorOf = (node) => {
  let i = model.nodeOrder.indexOf(node);
  if (i < 0) {
    model.nodeOrder.push(node);
    i = model.nodeOrder.length - 1;
  }
  return PALETTE[i % PALETTE.length];
};

function requestFlush() {
  if (!frame) frame = requestAnimationFrame(flush);
}

function taskState(name) {
  const ev = model.tasks.get(name);
  if (!ev) {
    const t = model.stats?.tasks?.[name];
    if (t?.running > 0) return 'running';
    if (t?.waiting > 0) return 'queued';
    return t?.processed > 0 ? 'done' : 'idle';
  }
  switch (ev.event) {
    case 'enter': return 'queued';
    case 'start': return 'running';
    case 'finish': return 'done';
    case 'fail': return ev.final === false ? 'queued' : 'failed';
    default: return 'idle';
  }
}

// ---- live feed (/live) ----

// The server sends every app's mapping and every node, plus the tasks and stats of the app named
// here; switching apps gets the new app's current state at once.
function subscribeApp(app) {
  if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ app }));
}

function selectApp(app) {
  if (app === model.app) return;
  model.app = app;
  model.tasks.clear();
  model.stats = null;
  model.remap = null;
  model.history = [];
  document.body.dataset.app = app;
  const url = new URL(location.href);
  url.searchParams.set('app', app);
  history.replaceState(null, '', url);
  subscribeApp(app);
  dirty.graph = true;
  dirty.stats = true;
  dirty.apps = true;
  requestFlush();
}

function onMessage(topic, msg) {
  model.messages += 1;
  if (!msg || typeof msg !== 'object') return;
  const parts = topic.split('/');
  if (parts[1] === 'nodes') {
    model.nodes.set(msg.node, msg);
    dirty.nodes = true;
  } else if (parts[1] === 'network' && parts[2] === 'faults') {
    model.faults = msg;
    dirty.nodes = true;
  } else if (parts[1] === model.app && parts[2] === 'remap') {
    model.remap = msg;
    dirty.nodes = true;
  } else if (parts[2] === 'mapping') {
    model.mappings.set(parts[1], msg);
    dirty.apps = true;
    if (!model.app) selectApp(parts[1]);
    else if (parts[1] === model.app) dirty.graph = true;
  } else if (parts[1] === model.app && parts[2] === 'tasks') {
    model.tasks.set(msg.task, msg);
    dirty.tasks.add(msg.task);
  } else if (parts[1] === model.app && parts[2] === 'stats') {
    model.stats = msg;
    const last = model.history[model.history.length - 1];
    if (!last || msg.ts > last.ts) {
      model.history.push({ ts: msg.ts, throughput: msg.throughput, p50: msg.makespanP50Sec, p95: msg.makespanP95Sec });
      if (model.history.length > HISTORY) model.history.shift();
    }
    dirty.stats = true;
  }
  requestFlush();
}

function showStatus(status) {
  const live = status.broker && socket?.readyState === WebSocket.OPEN;
  document.body.dataset.connected = String(live);
  $('conn-text').textContent = live ? 'live' : status.configured === false ? 'no MQTT broker configured' : 'broker offline; retrying…';
}

function openLive() {
  const url = new URL('/live', location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  if (model.app) url.searchParams.set('app', model.app);
  const ws = new WebSocket(url);
  socket = ws;
  // The app may have changed while connecting (the URL carried the one at the time).
  ws.onopen = () => subscribeApp(model.app);
  ws.onmessage = (e) => {
    for (const entry of JSON.parse(e.data)) {
      if (entry.status) showStatus(entry.status);
      else onMessage(entry.topic, entry.msg);
    }
  };
  ws.onclose = () => {
    if (socket !== ws) return;
    socket = undefined;
    document.body.dataset.connected = 'false';
    $('conn-text').textContent = 'dashboard server unreachable; retrying…';
    // On reconnect the server sends everything it remembers, so nothing is lost meanwhile.
    setTimeout(openLive, 2000);
  };
}

async function connect() {
  const cfg = await (await fetch('/config.json')).json();
  const wanted = new URL(location.href).searchParams.get('app') || cfg.app || '';
  if (wanted) selectApp(wanted);
  openLive();
}

// ---- rendering ----

function flush() {
  frame = 0;
  if (dirty.apps) renderApps();
  if (dirty.graph) {
    renderGraph();
    renderTable();
    renderNodeCards();
    renderScheduleAndKpis();
    for (const n of model.tasks.keys()) dirty.tasks.add(n);
    dirty.stats = true;
  }
  if (dirty.stats) renderStats();
  if (dirty.tasks.size > 0) {
    for (const name of dirty.tasks) updateTask(name);
    dirty.tasks.clear();
  }
  if (dirty.nodes) renderNodeCards();
  dirty.apps = dirty.graph = dirty.stats = dirty.nodes = false;
}

function renderApps() {
  const sel = $('app-select');
  const apps = [...model.mappings.keys()].sort();
  if (model.app && !apps.includes(model.app)) apps.push(model.app);
  if (apps.length === 0) return;
  sel.replaceChildren(...apps.map((a) => new Option(a, a, false, a === model.app)));
}

function currentMapping() {
  return model.mappings.get(model.app);
}

function renderGraph() {
  const svg = $('dag');
  svg.replaceChildren();
  view.taskEls.clear();
  const m = currentMapping();
  if (!m) return;
  model.nodeOrder = [...new Set(Object.values(m.mapping))].sort();
  const tasks = m.dag?.tasks?.length ? m.dag.tasks : Object.keys(m.mapping).map((name) => ({ name, children: [] }));
  const big = tasks.length > 60;
  const L = layeredLayout(tasks, big ? { width: 120, height: 34, gapX: 44, gapY: 8 } : {});
  const pad = 14;
  svg.setAttribute('viewBox', `${-pad} ${-pad} ${L.width + 2 * pad} ${L.height + 2 * pad}`);
  // Small DAGs fill the panel; big ones get the height they need (the panel scrolls).
  svg.style.minHeight = `${Math.min(big ? 900 : 420, Math.max(180, L.height + 2 * pad))}px`;
  $('dag-caption').textContent = `${tasks.length} tasks · ${model.nodeOrder.length} nodes`;
  const defs = el('defs');
  const marker = el('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.append(el('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'arrow' }));
  defs.append(marker);
  svg.append(defs);
  const edges = el('g', { class: 'edges' });
  const nodes = el('g', { class: 'tasks' });
  const frag = document.createDocumentFragment();
  for (const t of tasks) {
    const a = L.pos.get(t.name);
    for (const c of t.children) {
      const b = L.pos.get(c);
      if (!a || !b) continue;
      const x1 = a.x + L.w;
      const y1 = a.y + L.h / 2;
      const x2 = b.x - 2;
      const y2 = b.y + L.h / 2;
      const dx = Math.max(20, (x2 - x1) / 2);
      edges.append(el('path', { d: `M${x1},${y1} C${x1 + dx},${y1} ${x2 - dx},${y2} ${x2},${y2}`, class: 'edge', 'marker-end': 'url(#arrow)' }));
    }
  }
  for (const t of tasks) {
    const p = L.pos.get(t.name);
    const node = m.mapping[t.name] ?? '?';
    const color = colorOf(node);
    const g = el('g', { class: 'task idle', transform: `translate(${p.x},${p.y})`, 'data-task': t.name, 'data-node': node, 'data-state': 'idle' });
    g.append(el('rect', { class: 'box', width: L.w, height: L.h, rx: 7, stroke: color }));
    g.append(el('rect', { class: 'band', width: 6, height: L.h, rx: 3, fill: color }));
    g.append(el('text', { class: 'name', x: 14, y: big ? 14 : 19 }, t.name.length > (big ? 14 : 18) ? `${t.name.slice(0, big ? 13 : 17)}…` : t.name));
    g.append(el('text', { class: 'node', x: 14, y: big ? 27 : 35, fill: color }, `${node}${t.sink ? ' → home' : ''}`));
    const status = el('circle', { class: 'status', cx: L.w - 13, cy: 13, r: big ? 5 : 6 });
    const count = el('text', { class: 'count', x: L.w - 8, y: L.h - 8, 'text-anchor': 'end' }, '');
    g.append(status, count, el('title', {}, `${t.name} on ${node}`));
    frag.append(g);
    view.taskEls.set(t.name, { g, count });
  }
  nodes.append(frag);
  svg.append(edges, nodes);
}

function renderTable() {
  const body = $('mapping-table').tBodies[0];
  body.replaceChildren();
  view.rows.clear();
  const m = currentMapping();
  if (!m) return;
  const names = m.dag?.tasks?.length ? m.dag.tasks.map((t) => t.name) : Object.keys(m.mapping);
  const frag = document.createDocumentFragment();
  for (const name of names) {
    const node = m.mapping[name] ?? '?';
    const tr = document.createElement('tr');
    tr.dataset.task = name;
    tr.dataset.node = node;
    tr.innerHTML = '<td class="t"></td><td><span class="swatch"></span><span class="n"></span></td><td><span class="pill"></span></td><td class="num c-processed">0</td><td class="num c-failed">0</td><td class="num c-waiting">0</td><td class="num c-running">0</td><td class="num c-mean">–</td><td class="item">–</td>';
    tr.querySelector('.t').textContent = name;
    tr.querySelector('.n').textContent = node;
    tr.querySelector('.swatch').style.background = colorOf(node);
    frag.append(tr);
    view.rows.set(name, tr);
  }
  body.append(frag);
}

function updateTask(name) {
  const st = taskState(name);
  const t = model.stats?.tasks?.[name];
  const ev = model.tasks.get(name);
  const te = view.taskEls.get(name);
  if (te && te.g.dataset.state !== st) {
    te.g.dataset.state = st;
    te.g.setAttribute('class', `task ${st}`);
  }
  if (te && t) te.count.textContent = t.failed > 0 ? `✓${t.processed} ✗${t.failed}` : `✓${t.processed}`;
  const tr = view.rows.get(name);
  if (tr) {
    const pill = tr.querySelector('.pill');
    pill.textContent = st;
    pill.className = `pill ${st}`;
    tr.dataset.state = st;
    if (t) {
      tr.querySelector('.c-processed').textContent = String(t.processed);
      tr.querySelector('.c-failed').textContent = String(t.failed);
      tr.querySelector('.c-waiting').textContent = String(t.waiting);
      tr.querySelector('.c-running').textContent = String(t.running);
      tr.querySelector('.c-mean').textContent = fmtSec(t.meanDurationSec);
    }
    if (ev) tr.querySelector('.item').textContent = `${ev.item} · ${ev.event}`;
  }
  const chip = view.chips.get(name);
  if (chip) chip.dataset.state = st;
}

function renderScheduleAndKpis() {
  const m = currentMapping();
  $('kpi-mapper').textContent = m?.mapper ?? '–';
  $('kpi-predicted').textContent = m ? fmtSec(m.predictedMakespanSec) : '–';
  $('gantt-caption').textContent = m ? `${m.mapper} · makespan ${fmtSec(m.predictedMakespanSec)}` : '';
  renderGantt($('gantt'), m?.schedule ?? [], colorOf, m?.predictedMakespanSec);
}

function renderStats() {
  const s = model.stats;
  $('kpi-done').textContent = s ? String(s.itemsDone) : '0';
  $('kpi-failed').textContent = s ? String(s.itemsFailed) : '0';
  $('kpi-throughput').textContent = s ? `${s.throughput.toFixed(2)} /s` : '–';
  $('kpi-makespan').textContent = s ? `${fmtSec(s.makespanP50Sec)} / ${fmtSec(s.makespanP95Sec)}` : '–';
  $('kpi-queue').textContent = s ? `${s.queued} / ${s.running}` : '–';
  if (s) for (const name of Object.keys(s.tasks)) dirty.tasks.add(name);
  renderChart($('chart'), model.history, currentMapping()?.predictedMakespanSec);
}

function bar(label, value) {
  const v = value === null || value === undefined ? null : Math.max(0, Math.min(100, value));
  const level = v === null ? '' : v > 85 ? 'hot' : v > 60 ? 'warm' : '';
  return `<div class="meter"><span class="ml">${label}</span><span class="track"><span class="fill ${level}" style="width:${v ?? 0}%"></span></span><span class="mv">${v === null ? '–' : `${v.toFixed(0)}%`}</span></div>`;
}

function renderNodeCards() {
  const box = $('node-cards');
  const m = currentMapping();
  const names = [...new Set([...(m ? Object.values(m.mapping) : []), ...model.nodes.keys()])].sort((a, b) => {
    const ia = model.nodeOrder.indexOf(a);
    const ib = model.nodeOrder.indexOf(b);
    return (ia < 0 ? 1e9 : ia) - (ib < 0 ? 1e9 : ib) || a.localeCompare(b);
  });
  const rebuild = names.join('|') !== box.dataset.names || dirty.graph;
  if (rebuild) {
    box.replaceChildren();
    view.cards.clear();
    view.chips.clear();
    box.dataset.names = names.join('|');
    for (const n of names) {
      const card = document.createElement('div');
      card.className = 'card';
      card.dataset.node = n;
      card.style.setProperty('--node', colorOf(n));
      card.innerHTML = '<div class="card-head"><span class="swatch"></span><span class="cn"></span><span class="alive"></span></div><div class="meters"></div><div class="meta"></div><div class="chips"></div>';
      card.querySelector('.cn').textContent = n;
      const chips = card.querySelector('.chips');
      const mine = m ? Object.entries(m.mapping).filter(([, node]) => node === n).map(([t]) => t) : [];
      for (const t of mine) {
        const chip = document.createElement('span');
        chip.className = 'chip';
        chip.dataset.task = t;
        chip.dataset.state = taskState(t);
        chip.textContent = t;
        chips.append(chip);
        view.chips.set(t, chip);
      }
      if (mine.length === 0) chips.innerHTML = '<span class="none">no tasks mapped here</span>';
      box.append(card);
      view.cards.set(n, card);
    }
  }
  for (const n of names) {
    const card = view.cards.get(n);
    const r = model.nodes.get(n);
    card.querySelector('.meters').innerHTML = bar('CPU', r?.cpuPercent) + bar('MEM', r?.memPercent);
    const alive = card.querySelector('.alive');
    alive.textContent = r ? (r.alive ? 'up' : 'silent') : 'no report';
    alive.className = `alive ${r?.alive ? 'up' : 'down'}`;
    card.dataset.cpu = r?.cpuPercent ?? '';
    card.dataset.mem = r?.memPercent ?? '';
    const meta = [];
    if (r?.cores) meta.push(`${r.cores} cores`);
    if (r?.load1 !== null && r?.load1 !== undefined) meta.push(`load ${r.load1.toFixed(2)}`);
    if (r?.freeMemBytes) meta.push(`${(r.freeMemBytes / 2 ** 30).toFixed(1)} GiB free`);
    if (r?.heartbeatAt) meta.push(`seen ${new Date(r.heartbeatAt).toLocaleTimeString()}`);
    card.querySelector('.meta').textContent = meta.join(' · ');
  }
  renderNetwork();
}

// Lossy or dead links (or nodes) localised from echo-probe loss, and the newest re-map event.
function renderNetwork() {
  const box = $('net-faults');
  const lines = [];
  for (const f of model.faults?.faults ?? []) {
    const where = f.kind === 'link' ? f.nodes.join(' ↔ ') : f.nodes.join(', ') || f.element;
    lines.push({ cls: f.dead ? 'fault dead' : 'fault lossy', text: `${f.kind} ${where}: ${f.dead ? 'DEAD' : 'lossy'}, ${(f.loss * 100).toFixed(1)}% loss` });
  }
  if (model.faults && lines.length === 0) lines.push({ cls: 'fault ok', text: `network: no faults (${model.faults.links.length} links probed)` });
  const r = model.remap;
  if (r) {
    const moves = r.moves.map((m) => `${m.task} ${m.from}→${m.to}`).join(', ');
    lines.push({ cls: 'remap', text: `re-map ${r.kind === 'remap' ? 'made' : 'suggested'} ${new Date(r.ts).toLocaleTimeString()}: gain ${(r.gain * 100).toFixed(0)}% (${r.reason}); ${moves || 'no moves'}` });
  }
  box.replaceChildren(...lines.map((l) => {
    const d = document.createElement('div');
    d.className = l.cls;
    d.textContent = l.text;
    return d;
  }));
}

$('app-select').addEventListener('change', (e) => selectApp(e.target.value));
let resizeTimer = 0;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    dirty.stats = true;
    renderScheduleAndKpis();
    requestFlush();
  }, 150);
});
window.__jupiter = { model, flushNow: flush };
connect().catch((e) => {
  $('conn-text').textContent = `cannot start: ${e.message}`;
});
