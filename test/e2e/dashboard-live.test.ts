// The live dashboard on a real deployment: the embedded stack in a fresh working directory, with
// Debian's mosquitto as the external broker (so that the test can stop it mid-run), the dummy app
// deployed and fed through the real CLI, and the hub's dashboard in Debian's Chromium.
import { expect } from 'chai';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { loadApp } from '../../config/app/load.js';
import type { AppSpec } from '../../config/types.js';
import { haveChromium, launchChromium, type TestBrowser } from '../support/chromium.js';
import { haveMosquitto, startMosquitto, type TestMosquitto } from '../support/mosquitto.js';
import { appsDir, repoRoot } from '../support/paths.js';
import { parsePrometheus, sampleSum, sampleValue } from '../dashboard/prom.js';
import { expectedDummyOutputs } from './oracle.js';
import { parseDeployOutput, sleep, statusJson, WorkDir, type StatusJson } from './workdir.js';

const APP = 'dummy';

interface Watch {
  /** task -> every data-state its box took, in order (starting with the one it was drawn with). */
  states: Record<string, string[]>;
  /** Every value the "items done" figure showed. */
  done: string[];
}

/** Records, inside the page, every state a task box takes and every "items done" value shown. */
function installWatch(): void {
  const w = { states: {} as Record<string, string[]>, done: [] as string[] };
  (window as unknown as { __watch: typeof w }).__watch = w;
  const note = (task: string, st: string): void => {
    const list = (w.states[task] ??= []);
    if (list[list.length - 1] !== st) list.push(st);
  };
  new MutationObserver((records) => {
    for (const r of records) {
      const t = r.target as Element;
      if (r.type === 'attributes' && t instanceof SVGGElement && t.dataset.task) note(t.dataset.task, t.dataset.state ?? '');
      if (r.type === 'childList') {
        for (const n of Array.from(r.addedNodes)) {
          if (n instanceof Element) for (const g of Array.from(n.querySelectorAll<SVGGElement>('g.task[data-task]'))) note(g.dataset.task!, g.dataset.state ?? '');
        }
        const done = document.getElementById('kpi-done')?.textContent ?? '';
        if (w.done[w.done.length - 1] !== done) w.done.push(done);
      }
    }
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true, attributeFilter: ['data-state'] });
}

async function watch(page: Page): Promise<Watch> {
  return page.evaluate(() => (window as unknown as { __watch: Watch }).__watch);
}

function writeInputs(dir: string, from: number, n: number): string[] {
  mkdirSync(dir, { recursive: true });
  return Array.from({ length: n }, (_, i) => {
    const f = join(dir, `${from + i}botnet.ipsum`);
    writeFileSync(f, `stream item ${from + i}: ${randomBytes(200).toString('hex')}\n`);
    return f;
  });
}

/** Wait until the page shows what `jupiter status --json` says (stats arrive every ~2 s). */
async function waitPageMatches(page: Page, st: StatusJson): Promise<void> {
  const want = {
    done: String(st.status.items.done),
    tasks: Object.fromEntries(st.status.tasks.map((t) => [t.task, [String(t.processed), String(t.failed), String(t.waiting)]])),
  };
  try {
    await page.waitForFunction((w) => {
      if (document.getElementById('kpi-done')?.textContent !== w.done) return false;
      return Object.entries(w.tasks).every(([task, [p, f, q]]) => {
        const tr = document.querySelector(`#mapping-table tr[data-task="${task}"]`);
        return tr?.querySelector('.c-processed')?.textContent === p && tr?.querySelector('.c-failed')?.textContent === f
          && tr?.querySelector('.c-waiting')?.textContent === q;
      });
    }, want, { timeout: 15_000 });
  } catch (e) {
    const shown = await page.evaluate(() => ({
      done: document.getElementById('kpi-done')?.textContent,
      rows: Array.from(document.querySelectorAll('#mapping-table tbody tr')).map((tr) => tr.textContent),
    }));
    throw new Error(`${(e as Error).message}\nwanted ${JSON.stringify(want)}\nshown ${JSON.stringify(shown)}`);
  }
}

describe('e2e: live dashboard on a real deployment (dummy, mosquitto, Chromium)', function () {
  this.timeout(120_000);
  let mosq: TestMosquitto | undefined;
  let w: WorkDir | undefined;
  let browser: TestBrowser | undefined;
  let page: Page;
  let app: AppSpec;
  let dashboardUrl: string;
  let outputDir: string;
  const t0 = Date.now();
  const marks: string[] = [];
  const mark = (what: string): void => {
    marks.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  };

  before(async function () {
    if (!haveChromium() || !haveMosquitto()) {
      console.log('      skipped: needs /usr/bin/chromium and /usr/sbin/mosquitto');
      this.skip();
    }
    app = await loadApp(join(appsDir, APP));
    mosq = await startMosquitto();
    // Slower tasks (50 ms each) so that a stream of a few dozen items lasts a few seconds.
    w = new WorkDir({ JUPITER_MQTT_URL: mosq.tcpUrl, DUMMY_BUSY_SECONDS: '0.05' });
    const up = await w.expectCli(['stack', 'up']);
    dashboardUrl = /^dashboard\s+(\S+)$/m.exec(up.stdout)![1]!;
    mark('stack up');
    browser = await launchChromium({ viewport: { width: 1440, height: 1000 } });
    page = await browser.newPage();
    await page.addInitScript(installWatch);
    await page.goto(`${dashboardUrl}/?app=${APP}`);
    await page.waitForSelector('body[data-connected="true"]', { timeout: 15_000 });
    // Deploy while the page watches: it sees the mapping arrive, then the first items.
    const dep = await w.expectCli(['deploy', APP, '--wait'], 0, 110_000);
    const out = parseDeployOutput(dep.stdout);
    expect(out.dashboardUrl).to.equal(`${dashboardUrl}/?app=${APP}`);
    outputDir = out.outputDir;
    mark('deployed');
  });

  after(async () => {
    if (w) console.log(`      timings: ${marks.join(', ')}`);
    await browser?.close();
    await w?.dispose([APP]);
    await mosq?.dispose();
  });

  it('draws every task with the node `jupiter status --json` maps it to', async () => {
    const st = await statusJson(w!, APP);
    await page.waitForFunction((n) => document.querySelectorAll('#dag g.task').length === n, app.dagTasks.length, { timeout: 15_000 });
    for (const t of app.dagTasks) {
      const node = st.mapping.mapping[t]!;
      expect(await page.getAttribute(`#dag g.task[data-task="${t}"]`, 'data-node'), t).to.equal(node);
      expect(await page.textContent(`#dag g.task[data-task="${t}"] text.node`), t).to.match(new RegExp(`^${node}`));
      expect(await page.textContent(`#mapping-table tr[data-task="${t}"] .n`), t).to.equal(node);
      expect(await page.locator(`#node-cards .card[data-node="${node}"] .chip[data-task="${t}"]`).count(), t).to.equal(1);
    }
    expect(await page.textContent('#kpi-mapper')).to.equal(st.mapping.mapper);
    const edges = app.tasks.reduce((a, t) => a + t.children.filter((c) => c !== 'home').length, 0);
    expect(await page.locator('#dag path.edge').count()).to.equal(edges);
    // every node card gets its agent's live CPU and memory
    await page.waitForFunction(() => Array.from(document.querySelectorAll('#node-cards .card')).every((c) => (c as HTMLElement).dataset.cpu !== ''), undefined, { timeout: 15_000 });
  });

  it('changes task states and numbers as items flow (40 more items submitted while watching)', async () => {
    await waitPageMatches(page, await statusJson(w!, APP));
    const before = await watch(page);
    const doneBefore = before.done.length;
    const counts = Object.fromEntries(await Promise.all(app.dagTasks.map(async (t) => [t, await page.textContent(`#dag g.task[data-task="${t}"] text.count`)] as const)));
    const files = writeInputs(join(w!.dir, 'stream'), 100, 40);
    const submit = w!.expectCli(['submit', APP, ...files, '--wait']);
    // a picture of the app running: wait until about half the items are through
    const target = app.sampleInputs.length + 20;
    await page.waitForFunction((n) => Number(document.getElementById('kpi-done')?.textContent) >= n, target, { timeout: 60_000 });
    mkdirSync(join(repoRoot, 'docs'), { recursive: true });
    // The README's picture: refreshed with JUPITER_UPDATE_SCREENSHOT=1, else kept out of the checkout.
    // Otherwise the picture is taken (it must render) but kept in memory: nothing left in the temp folder.
    const shot = process.env.JUPITER_UPDATE_SCREENSHOT === '1' ? join(repoRoot, 'docs', 'dashboard.png') : undefined;
    expect((await page.screenshot({ path: shot, fullPage: true })).length).to.be.greaterThan(0);
    await submit;
    mark('40 items through');
    const st = await statusJson(w!, APP);
    await waitPageMatches(page, st);
    const seen = await watch(page);
    for (const t of app.tasks) {
      const states = seen.states[t.name] ?? [];
      // drawn idle when the mapping came, then changed with the items; done once idle
      expect(states[0], `${t.name}: ${states.join(' ')}`).to.equal('idle');
      expect(states[states.length - 1], t.name).to.equal('done');
      // a join waits for its other inputs: it shows queued items while the stream flows
      if (t.numInputs > 1) expect(states, `${t.name}: ${states.join(' ')}`).to.include('queued');
      const now = await page.textContent(`#dag g.task[data-task="${t.name}"] text.count`);
      expect(now, t.name).to.not.equal(counts[t.name]);
      expect(now, t.name).to.equal(`✓${st.status.tasks.find((x) => x.task === t.name)!.processed}`);
    }
    // "items done" went up live, through at least one intermediate value, not in one jump at the
    // end (stats come every 2 s; each runner takes one item at a time, >= 50 ms each, so the 40
    // items take at least 2 s on any machine)
    const during = seen.done.slice(doneBefore).map(Number);
    expect(during.length, `items done shown: ${seen.done.join(' ')}`).to.be.at.least(2);
    expect(during[during.length - 1]).to.equal(st.status.items.done);
    expect(during).to.deep.equal([...during].sort((a, b) => a - b));
    expect(await page.textContent('#kpi-failed')).to.equal('0');
    expect(await page.textContent('#kpi-queue')).to.equal('0 / 0');
    expect(await page.textContent('#kpi-makespan')).to.match(/^\d+(\.\d+)? m?s \/ \d+(\.\d+)? m?s$/);
    expect(await page.locator('#chart polyline').count()).to.be.greaterThan(0);
    // the last item column shows items of the stream
    expect(await page.textContent('#mapping-table tr[data-task="task6"] .item')).to.match(/^1\d\dbotnet · finish$/);
  });

  it('serves /metrics as Prometheus text whose counters equal the sink\'s and `jupiter status`\'s counts', async () => {
    const st = await statusJson(w!, APP);
    const res = await fetch(new URL('/metrics', dashboardUrl));
    expect(res.status).to.equal(200);
    const samples = parsePrometheus(await res.text());
    const perItem = app.sinkTasks.length; // the dummy's sink tasks each send one output per item
    expect(st.status.sink.delivered).to.equal(st.status.items.done * perItem);
    expect(sampleValue(samples, 'jupiter_items_done_total', { app: APP })).to.equal(st.status.items.done);
    expect(sampleValue(samples, 'jupiter_makespan_seconds_count', { app: APP })).to.equal(st.status.makespan.count);
    for (const t of st.status.tasks) {
      const labels = { app: APP, task: t.task, node: st.mapping.mapping[t.task]! };
      expect(sampleValue(samples, 'jupiter_items_processed_total', labels), t.task).to.equal(t.processed);
      expect(sampleSum(samples, 'jupiter_items_processed_total', { app: APP, task: t.task }), t.task).to.equal(t.processed);
      expect(sampleValue(samples, 'jupiter_items_failed_total', labels) ?? 0, t.task).to.equal(t.failed);
      expect(sampleValue(samples, 'jupiter_task_duration_seconds_count', { app: APP, task: t.task }), t.task).to.equal(t.processed);
      // idle: nothing waits anywhere (a join's per-input `enter` events must not count as waiting items)
      expect(sampleValue(samples, 'jupiter_queue_depth', { app: APP, task: t.task, state: 'waiting' }), t.task).to.equal(t.waiting);
      expect(sampleValue(samples, 'jupiter_queue_depth', { app: APP, task: t.task, state: 'running' }), t.task).to.equal(t.active);
    }
    for (const n of ['node1', 'node2', 'node3']) {
      expect(sampleValue(samples, 'jupiter_node_up', { node: n }), n).to.equal(1);
      expect(sampleValue(samples, 'jupiter_node_cpu_percent', { node: n }), n).to.be.within(0, 100);
    }
    // The 6 directed links between the nodes, and each node's two with the home (agents profile those too).
    const links = samples.filter((s) => s.name === 'jupiter_link_bandwidth_bytes_per_second');
    expect(links.filter((s) => s.labels.from !== 'home' && s.labels.to !== 'home').length).to.equal(6);
    expect(links.filter((s) => s.labels.from === 'home' || s.labels.to === 'home').length).to.be.at.most(6);
  });

  it('delivers every output while the MQTT broker is stopped mid-stream, and the page recovers', async () => {
    const files = writeInputs(join(w!.dir, 'outage'), 200, 60);
    const outputsOf = files.map((f) => [...expectedDummyOutputs(app, f).keys()]);
    const arrived = (): number => outputsOf.filter((names) => names.every((n) => existsSync(join(outputDir, n)))).length;
    const st0 = await statusJson(w!, APP);
    const submit = w!.expectCli(['submit', APP, ...files, '--wait']);
    // stop the broker as soon as the first items of the stream are through
    for (let i = 0; i < 3000 && arrived() < 2; i++) await sleep(10);
    await mosq!.stop();
    mark('broker stopped');
    expect(arrived(), 'the stream finished before the broker was stopped').to.be.lessThan(files.length);
    await page.waitForSelector('body[data-connected="false"]', { timeout: 10_000 });
    await submit;
    mark('stream done without broker');
    const st = await statusJson(w!, APP);
    expect(st.status.items.done).to.equal(st0.status.items.done + files.length);
    expect(st.status.items.inFlight).to.equal(0);
    expect(st.status.deadLetterCount).to.equal(0);
    for (const f of files) {
      for (const [name, rec] of expectedDummyOutputs(app, f)) {
        expect(JSON.parse(readFileSync(join(outputDir, name), 'utf8')), name).to.deep.equal(rec);
      }
    }
    // broker back: the hub reconnects and resends, the page reconnects and catches up
    await mosq!.start();
    await page.waitForSelector('body[data-connected="true"]', { timeout: 15_000 });
    await waitPageMatches(page, st);
    mark('page caught up');
    const hubLog = readFileSync(join(w!.stateDir, 'logs', 'hub.log'), 'utf8');
    expect(hubLog.match(/MQTT broker .* unreachable/g), hubLog).to.have.length(1);
    expect(hubLog).to.match(/MQTT broker .* is back/);
  });
});
