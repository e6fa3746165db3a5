// The process the execution profiler times JavaScript and TypeScript tasks in (forked by
// js-timing.ts). Imported into the agent, a task's calls shared the agent's event loop, heap and
// CPU share with its probes: camera's 5-6 ms tasks timed at 11-14 ms beside a 1 MiB probe stream in
// the same process, twice what a deployed runner, a process to itself, then takes per item. Here
// the task has a quiet process of its own, as in its runner.
// Protocol (IPC, advanced serialization): TimeRequest in, TimeReply out, one at a time.
import type { TaskSpec } from '../../config/types.js';
import { createJsInvoker, type TaskInvoker } from '../../circe/invoke/invoker.js';
import { JS_REPEATS, timeCalls, type TimedCall } from './time-calls.js';

export interface TimeRequest {
  id: number;
  task: TaskSpec;
  names: string[];
  pathin: string;
  pathout: string;
}

export type TimeReply = { id: number; ok: true; timed: TimedCall } | { id: number; ok: false; error: string };

const invokers = new Map<string, TaskInvoker>();

async function answer(req: TimeRequest): Promise<TimeReply> {
  try {
    let inv = invokers.get(req.task.name);
    if (!inv) {
      inv = await createJsInvoker(req.task);
      invokers.set(req.task.name, inv);
    }
    const timed = await timeCalls(() => inv.invoke(req.names, req.pathin, req.pathout), JS_REPEATS);
    return { id: req.id, ok: true, timed };
  } catch (e) {
    return { id: req.id, ok: false, error: (e as Error).message };
  }
}

process.on('message', (msg: TimeRequest) => {
  void answer(msg).then((r) => process.send?.(r));
});
// The agent gone: nothing to time for.
process.on('disconnect', () => process.exit(0));
