// CIRCE's public surface for the deploy pipeline and the CLI (deploy, submit, status, logs,
// teardown). Everything else in circe/ is internal.
export { createInvoker, type TaskInvoker } from './invoke/invoker.js';
export { runHelper } from './invoke/helper.js';
export { OutputPathError } from './invoke/paths.js';
export { TaskRunner, nowMs, type TaskRunnerOptions } from './runner/task-runner.js';
export { runnerEnv, readRunnerEnv } from './runner/env.js';
export { submitItems, type SubmittedItem, type SubmitOptions } from './home/source.js';
export { Sink, outputPath, type SinkOptions } from './home/sink.js';
export { DoneWaiter, waitForItems, itemResults, type ItemResult, type WaitItem, type WaitOptions } from './home/wait.js';
export { getStatus, percentile, queueDepths, type AppStatus, type TaskStatus } from './queue/status.js';
export { teardownAppKeys } from './queue/teardown.js';
export { exportRuntimeCsv, RUNTIME_CSV_HEADER } from './queue/records.js';
export { configureApp, readSettings, DEFAULT_SETTINGS, type PipelineSettings } from './queue/settings.js';
export { connectRedis } from './queue/connection.js';
export { maskUrl } from '../config/cluster/mask.js';
export { appKeys, SINK_QUEUE, type AppKeys } from './queue/keys.js';
export { jobPrefix } from './queue/naming.js';
export { routeOutputs, expectedOutputs } from './dag/routing.js';
export type { DeadLetter } from './queue/failures.js';
export { ProcessRuntime, appStateDir, type ProcessRuntimeOptions } from './runtime/process.js';
