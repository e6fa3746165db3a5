// Prometheus metrics (prom-client, a private registry) fed by the telemetry bridge: counters and
// histograms from the event stream, gauges read from the bridge's state at scrape time.
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AppEvent } from '../../config/events.js';
import type { TelemetryBridge } from './bridge.js';

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const MAKESPAN_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export class TelemetryMetrics {
  readonly registry = new Registry();
  private readonly processed: Counter<'app' | 'task' | 'node'>;
  private readonly failed: Counter<'app' | 'task' | 'node'>;
  private readonly attemptsFailed: Counter<'app' | 'task' | 'node'>;
  private readonly itemsDone: Counter<'app'>;
  private readonly duration: Histogram<'app' | 'task'>;
  private readonly makespan: Histogram<'app'>;

  constructor(bridge: TelemetryBridge) {
    const registers = [this.registry];
    this.processed = new Counter({ name: 'jupiter_items_processed_total', help: 'Items a task finished', labelNames: ['app', 'task', 'node'], registers });
    this.failed = new Counter({ name: 'jupiter_items_failed_total', help: 'Items a task gave up on (final failures)', labelNames: ['app', 'task', 'node'], registers });
    this.attemptsFailed = new Counter({ name: 'jupiter_task_attempts_failed_total', help: 'Failed attempts, retried or not', labelNames: ['app', 'task', 'node'], registers });
    this.itemsDone = new Counter({ name: 'jupiter_items_done_total', help: 'Items whose outputs all reached the home sink', labelNames: ['app'], registers });
    this.duration = new Histogram({ name: 'jupiter_task_duration_seconds', help: 'Execution time of one item in one task', labelNames: ['app', 'task'], buckets: DURATION_BUCKETS, registers });
    this.makespan = new Histogram({ name: 'jupiter_makespan_seconds', help: 'Time from an item entering the DAG to its last output at the sink', labelNames: ['app'], buckets: MAKESPAN_BUCKETS, registers });

    new Gauge({
      name: 'jupiter_queue_depth', help: 'Items waiting in a task queue, or being processed', labelNames: ['app', 'task', 'state'], registers,
      collect() {
        this.reset();
        for (const app of bridge.apps()) {
          const snap = bridge.stats(app)?.snapshot();
          for (const [task, t] of Object.entries(snap?.tasks ?? {})) {
            this.set({ app, task, state: 'waiting' }, t.waiting);
            this.set({ app, task, state: 'running' }, t.running);
          }
        }
      },
    });
    const nodeGauge = (name: string, help: string, pick: (n: ReturnType<TelemetryBridge['nodes']>[number]) => number | null): void => {
      new Gauge({
        name, help, labelNames: ['node'], registers,
        collect() {
          this.reset();
          for (const n of bridge.nodes()) {
            const v = pick(n);
            if (v !== null) this.set({ node: n.node }, v);
          }
        },
      });
    };
    nodeGauge('jupiter_node_cpu_percent', 'CPU use of a node, percent (resource profiler)', (n) => n.cpuPercent);
    nodeGauge('jupiter_node_memory_percent', 'Memory use of a node, percent (resource profiler)', (n) => n.memPercent);
    nodeGauge('jupiter_node_free_memory_bytes', 'Free memory of a node, bytes', (n) => n.freeMemBytes);
    nodeGauge('jupiter_node_up', '1 while the node agent heartbeats', (n) => (n.alive ? 1 : 0));
    const linkGauge = (name: string, help: string, pick: (l: { bandwidthBytesPerSec: number; latencySec: number }) => number): Gauge<'from' | 'to'> =>
      new Gauge({
        name, help, labelNames: ['from', 'to'], registers,
        async collect() {
          this.reset();
          for (const l of await bridge.links()) {
            const v = pick(l);
            if (Number.isFinite(v)) this.set({ from: l.from, to: l.to }, v);
          }
        },
      });
    linkGauge('jupiter_link_bandwidth_bytes_per_second', 'Fitted bandwidth of a link (network profiler)', (l) => l.bandwidthBytesPerSec);
    linkGauge('jupiter_link_latency_seconds', 'Fitted latency of a link (network profiler)', (l) => l.latencySec);

    bridge.onEvent((ev) => this.observe(ev));
  }

  observe(ev: AppEvent): void {
    if (ev.type === 'item-done') {
      this.itemsDone.inc({ app: ev.app });
      this.makespan.observe({ app: ev.app }, ev.makespanMs / 1000);
      return;
    }
    const labels = { app: ev.app, task: ev.task, node: ev.node };
    if (ev.type === 'finish') {
      this.processed.inc(labels);
      if (ev.durationMs !== undefined) this.duration.observe({ app: ev.app, task: ev.task }, ev.durationMs / 1000);
    } else if (ev.type === 'fail') {
      this.attemptsFailed.inc(labels);
      if (ev.final !== false) this.failed.inc(labels);
    }
  }

  /** The exposition text (Prometheus format). */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
