// The agent's side of the JS timing host (js-timing-host.ts): forked at the first JavaScript or
// TypeScript task of a profile, asked one task at a time, stopped when the profile ends. A task
// that ends its process (process.exit, a crash) fails its own profile, not the agent.
import { fork, type ChildProcess } from 'node:child_process';
import type { TaskSpec } from '../../config/types.js';
import type { TimedCall } from './time-calls.js';
import type { TimeReply, TimeRequest } from './js-timing-host.js';

const HOST = new URL('./js-timing-host.js', import.meta.url);

export class JsTimingHost {
  private child?: ChildProcess;
  private nextId = 0;
  private readonly pending = new Map<number, { resolve: (t: TimedCall) => void; reject: (e: Error) => void }>();

  /** The fastest of the task's timed calls on these inputs, in the host (time-calls.ts). */
  time(task: TaskSpec, names: string[], pathin: string, pathout: string): Promise<TimedCall> {
    const child = this.started();
    const id = this.nextId++;
    const req: TimeRequest = { id, task, names, pathin, pathout };
    return new Promise<TimedCall>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.send(req, (e) => {
        if (e) this.settle(id, new Error(`could not reach the timing process: ${e.message}`));
      });
    });
  }

  async close(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.disconnect();
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    await gone;
    clearTimeout(timer);
  }

  private started(): ChildProcess {
    if (this.child) return this.child;
    const child = fork(HOST, [], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.on('message', (r: TimeReply) => this.settle(r.id, r.ok ? r.timed : new Error(r.error)));
    child.on('exit', (code, signal) => {
      if (this.child === child) this.child = undefined;
      const why = new Error(`the task ended the timing process (${signal ?? `exit code ${code}`})`);
      for (const id of [...this.pending.keys()]) this.settle(id, why);
    });
    child.on('error', () => undefined); // 'exit' follows and fails what is pending
    this.child = child;
    return child;
  }

  private settle(id: number, r: TimedCall | Error): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if (r instanceof Error) p.reject(r);
    else p.resolve(r);
  }
}
