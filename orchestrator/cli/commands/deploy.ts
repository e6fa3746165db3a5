// `jupiter deploy <app>`: the whole pipeline, with progress, then the placement and (with --wait)
// per-item makespans and where the outputs are.
import type { Command } from 'commander';
import { action } from '../run.js';
import { inputError, runtimeError } from '../../../config/errors.js';

interface Opts {
  mapper?: string;
  runtime?: string;
  inputs?: string;
  wait?: boolean;
  timeout: string;
  seed?: string;
  json?: boolean;
  queueCap?: string;
  dataPath?: string;
  attempts?: string;
}

/** A pipeline setting given on the command line: a positive integer. */
function positiveInt(flag: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw inputError(`${flag} must be a positive integer, got ${JSON.stringify(v)}`, { hint: `for example ${flag} 50` });
  return n;
}

export function register(program: Command): void {
  program
    .command('deploy <app>')
    .description('profile, map and start an app (folder or name under apps/), then feed its inputs')
    .option('-m, --mapper <name>', 'mapper (see `jupiter map --mapper list`); default from the configuration')
    .option('-r, --runtime <name>', 'process or docker; default from the configuration')
    .option('-i, --inputs <dir>', 'folder of input files (default: the app\'s sample_input/)')
    .option('-w, --wait', 'wait for every output, then print makespans and where outputs are')
    .option('--timeout <sec>', 'with --wait: give up after this many seconds', '300')
    .option('--seed <n>', 'seed of randomised mappers')
    .option('--json', 'print the result as JSON')
    .option('--queue-cap <n>', 'waiting items per task queue before the source holds back (back-pressure; default 10000)')
    .option('--data-path <path>', 'where output bytes travel: central (through the home\'s Redis) or direct (node to node); default from the configuration')
    .option('--attempts <n>', 'attempts per item and task before it is dead-lettered (exponential backoff; default 3)')
    .action(action(async (appArg: string, opts: Opts) => {
      // Loaded on use, so that `jupiter --help` and other commands start fast.
      const [{ deploy }, { createProgress }, { itemsTable, placementTable }] = await Promise.all([
        import('../../deploy/pipeline.js'), import('../../progress.js'), import('../../report/tables.js'),
      ]);
      if (opts.dataPath !== undefined && opts.dataPath !== 'central' && opts.dataPath !== 'direct') {
        throw inputError(`--data-path must be central or direct, got ${JSON.stringify(opts.dataPath)}`, { hint: 'central: bytes through the home\'s Redis; direct: from the producing node to the receiving one' });
      }
      const settings = { queueCap: positiveInt('--queue-cap', opts.queueCap), attempts: positiveInt('--attempts', opts.attempts), dataPath: opts.dataPath as 'central' | 'direct' | undefined };
      const res = await deploy({
        app: appArg,
        mapper: opts.mapper,
        runtime: opts.runtime,
        inputs: opts.inputs,
        wait: opts.wait,
        timeoutSec: Number(opts.timeout),
        seed: opts.seed === undefined ? undefined : Number(opts.seed),
        settings: Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined)),
      }, createProgress());
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ mapping: res.record, deployment: res.deployment, items: res.items, results: res.results, dashboard: res.dashboardUrl }, null, 2)}\n`);
      } else {
        const out = [`\nPlacement of ${res.app.name} (${res.cluster.runtime} runtime):`, placementTable(res.record)];
        if (res.results) out.push('', 'Items:', itemsTable(res.results, res.app.name));
        out.push('', `outputs:   ${res.deployment.outputDir}`, `state:     ${res.cluster.stateDir}`);
        if (res.dashboardUrl) out.push(`dashboard: ${res.dashboardUrl}/?app=${encodeURIComponent(res.app.name)}`);
        out.push(`status:    jupiter status ${res.app.name}`, `teardown:  jupiter teardown ${res.app.name}`);
        // The embedded stack outlives the deployment: say how to stop it too.
        if (res.cluster.embedded) out.push(`stop all:  jupiter teardown ${res.app.name} --stack   (also stops the private Redis, hub, agents and Docker engine it started)`);
        process.stdout.write(`${out.join('\n')}\n`);
      }
      const failed = res.results?.filter((r) => r.failed || !r.done) ?? [];
      if (failed.length) throw runtimeError(`${failed.length} of ${res.results!.length} item(s) failed or did not finish`, { hint: `see jupiter status ${res.app.name}` });
    }));
}
