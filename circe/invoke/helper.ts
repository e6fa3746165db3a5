// Non-DAG helper tasks (`<name> 1 false <name>`) run once as scripts with their arguments:
// `python3 -u <script>.py args...`, or `sh <script>.sh args...`, in the app's scripts folder.
import { spawn } from 'node:child_process';
import { dirname, join, relative } from 'node:path';
import type { Launch } from '../compat/centralized.js';
import type { TaskSpec } from '../../config/types.js';
import { inputError } from '../../config/errors.js';

export function helperCommand(task: TaskSpec): { cmd: string; args: string[] } {
  const args = task.args.map(String);
  switch (task.language) {
    case 'python': return { cmd: process.env.JUPITER_PYTHON ?? 'python3', args: ['-u', task.scriptFile, ...args] };
    case 'shell': return { cmd: 'sh', args: [task.scriptFile, ...args] };
    case 'javascript': return { cmd: process.execPath, args: [task.scriptFile, ...args] };
    case 'typescript': return { cmd: process.execPath, args: ['--import', 'tsx', task.scriptFile, ...args] };
    default: throw inputError(`task ${task.name}: cannot run a ${String(task.language)} script`, { file: task.scriptFile });
  }
}

/**
 * Run the helper to completion with inherited stdio; resolves with its exit code. With `launch`
 * (an original Jupiter app, circe/compat/centralized.ts) the script runs from its copy under
 * /centralized_scheduler, as `python3 -u /centralized_scheduler/<script>.py args` did.
 */
export function runHelper(task: TaskSpec, env: NodeJS.ProcessEnv = process.env, launch?: { appDir: string } & Pick<Launch, 'scriptsDir' | 'env' | 'wrap'>): Promise<number> {
  const scriptFile = launch ? join(launch.scriptsDir, relative(join(launch.appDir, 'scripts'), task.scriptFile)) : task.scriptFile;
  const plain = helperCommand({ ...task, scriptFile });
  const { cmd, args } = launch ? launch.wrap(plain.cmd, plain.args) : plain;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: launch ? '/' : dirname(task.scriptFile), stdio: ['ignore', 'inherit', 'inherit'], env: { ...env, ...launch?.env } });
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}
