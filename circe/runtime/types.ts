// What every runtime (process, docker) offers the deploy pipeline.
import type { AppSpec, ClusterConfig } from '../../config/types.js';

/** Everything a task runner needs to know, passed as environment variables (JUPITER_*). */
export interface RunnerSpec {
  app: string;
  task: string;
  node: string;
  /** Deployment (run) id: outputs land under runs/<app>/<runId>/. */
  runId: string;
  redisUrl: string;
  redisPrefix: string;
}

export interface RunnerHandle {
  task: string;
  node: string;
  /** pid for the process runtime, container id for docker. */
  id: string;
}

export interface TeardownReport {
  /** Human-readable lines: what was removed. */
  removed: string[];
  /** What could not be reached or removed (an engine that is down): it may still run. */
  failed?: string[];
}

export interface StartOptions {
  /**
   * A task that moves to another node (a live re-map): its runner elsewhere is stopped gracefully
   * and given this long to finish its item and hand over what it holds (default: removed at once,
   * as for a lost node).
   */
  moveGraceSec?: number;
}

export interface Runtime {
  readonly name: 'process' | 'docker';
  /** Prepare what starting needs (for docker: build the app image on each node's engine). */
  prepare(app: AppSpec, cluster: ClusterConfig, onProgress?: (msg: string) => void): Promise<void>;
  /** Start one runner per task on its mapped node. Must be idempotent for a task already running. */
  start(app: AppSpec, specs: RunnerSpec[], cluster: ClusterConfig, opts?: StartOptions): Promise<RunnerHandle[]>;
  /** Runners of the app that are alive now. */
  list(app: string, cluster: ClusterConfig): Promise<RunnerHandle[]>;
  /** Stop and remove every runner of the app. */
  teardown(app: string, cluster: ClusterConfig): Promise<TeardownReport>;
  /** Recent log lines of one task's runner. */
  logs(app: string, task: string, cluster: ClusterConfig, tail?: number): Promise<string>;
}
