// What the runner-based probes share (task-probe.ts, local-hop-probe.ts): a scratch app in a
// scratch folder, a real TaskRunner per task in this process on the round's own connections,
// items submitted one at a time and waited for, and a clean-up that leaves nothing however the
// probe ends (the runners closed together, the app's keys removed, the connections released, the
// folder removed), bounded when the round is abandoned (round.ts).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { AppSpec, TaskSpec } from '../../config/types.js';
import { configureApp } from '../../circe/queue/settings.js';
import { teardownAppKeys } from '../../circe/queue/teardown.js';
import { appKeys } from '../../circe/queue/keys.js';
import { submitItems } from '../../circe/home/source.js';
import { TaskRunner, type TaskRunnerOptions } from '../../circe/runner/task-runner.js';
import { writeScratchApp, type ScratchTask } from './scratch-app.js';
import type { ProbeRound } from './round.js';
import { removeScratch, scratchDir, type ScratchKind } from './scratch-dir.js';

/** How long a probe item may take before the probe gives up (an item takes milliseconds). */
const ITEM_TIMEOUT_MS = 10_000;

export interface ScratchRunOptions {
  redis: Redis;
  prefix: string;
  node: string;
  /** Names the scratch folder and app: `<kind>-<node>-<pid>`. */
  kind: Exclude<ScratchKind, 'overhead'>;
  tasks: ScratchTask[];
  /** The scratch app's pipeline settings (configureApp). */
  settings?: Parameters<typeof configureApp>[3];
  /** Each runner's options beyond app, task, node, prefix and connections (`dir`: the scratch folder). */
  runner(task: TaskSpec, dir: string): Pick<TaskRunnerOptions, 'redisUrl' | 'workDir' | 'dataDir'>;
  round: ProbeRound;
}

export interface ScratchRun {
  app: AppSpec;
  /** The round's connection for the probe's own commands. */
  own: Redis;
  runners: TaskRunner[];
  /** Write input file `i` holding `text`; its path. */
  input(i: number, text: string): Promise<string>;
  /**
   * Submit `file` as an item and wait, polling every `pollMs`, until `lastTask` has finished it;
   * the item's runtime record key, or undefined after ITEM_TIMEOUT_MS.
   */
  submitAndWait(file: string, lastTask: string, pollMs: number): Promise<string | undefined>;
}

/**
 * Run `probe` on a scratch app's runners; undefined when the app or a runner cannot start (no
 * Python here), when `probe` throws, or when it gives up itself.
 */
export async function withScratchRun<T>(o: ScratchRunOptions, probe: (run: ScratchRun) => Promise<T | undefined>): Promise<T | undefined> {
  const { round, prefix } = o;
  const dir = await scratchDir(o.kind);
  const name = `${o.kind}-${o.node.replace(/[^A-Za-z0-9_-]/g, '_')}-${process.pid}`;
  const conns = [round.connect(o.redis), round.connect(o.redis, { maxRetriesPerRequest: null })];
  const label = `app ${prefix}${name}`;
  // The probe's own commands go over the round's connection too: on `redis` (which never gives up
  // a command) a probe waited for a Redis gone mid-round, and so did its runner's Python worker.
  const own = conns[0]!;
  const runners: TaskRunner[] = [];
  try {
    const app = await writeScratchApp(join(dir, name), o.tasks);
    round.made(label, (r) => teardownAppKeys(r, prefix, name));
    await round.guard(configureApp(own, prefix, app.name, o.settings ?? {}));
    const shared = { redis: own, workerRedis: conns[1]! };
    for (const task of app.tasks) {
      runners.push(await round.opened(TaskRunner.start({ app, task, node: o.node, prefix, shared, ...o.runner(task, dir) }), () => removeScratch(dir)));
    }
    const k = appKeys(prefix, app.name);
    const input = async (i: number, text: string): Promise<string> => {
      const f = join(dir, `${i}in.txt`);
      await writeFile(f, text);
      return f;
    };
    const submitAndWait = async (file: string, lastTask: string, pollMs: number): Promise<string | undefined> => {
      const [it] = await submitItems(own, prefix, app, [file], { runId: 'probe' });
      const rt = k.rt(it!.item);
      const deadline = Date.now() + ITEM_TIMEOUT_MS;
      while (!(await own.hexists(rt, `${lastTask}|finish`))) {
        if (Date.now() > deadline) return undefined;
        await new Promise((r) => setTimeout(r, pollMs));
      }
      return rt;
    };
    return await probe({ app, own, runners, input, submitAndWait });
  } catch {
    return undefined;
  } finally {
    // Together: with Redis gone each close waits CLOSE_GIVE_UP_MS before giving up.
    await round.closing(Promise.all(runners.map((r) => r.close().catch(() => undefined))));
    await round.clean(o.redis, label);
    await Promise.all(conns.map((c) => round.release(c)));
    await removeScratch(dir);
  }
}
