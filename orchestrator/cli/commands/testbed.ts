// `jupiter testbed up|status|link|down`: an emulated dispersed network on this Linux machine (a
// namespace, address and Docker engine per host, shaped links, faults), with the cluster
// configuration to deploy on it (orchestrator/testbed/).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { inputError } from '../../../config/errors.js';
import { displayPath, readTextFile } from '../../../config/app/text.js';
import { parseTopologyText, type Topology } from '../../../config/testbed/topology.js';
import { action } from '../run.js';
import { PRESETS, presetTopology } from '../../testbed/presets.js';
import { folderOf, requireTestbedById, requireTestbedState, testbedDir } from '../../testbed/state.js';

const DIR_HELP = 'the testbed\'s folder: state, cluster configuration, logs (default ./jupiter-testbed)';

async function topologyOf(arg: string): Promise<Topology> {
  if (existsSync(arg)) return parseTopologyText(await readTextFile(resolve(arg), { what: 'topology file' }), displayPath(resolve(arg)));
  const preset = presetTopology(arg);
  if (preset) return preset;
  throw inputError(`${JSON.stringify(arg)} is neither a topology file nor a preset`, { hint: `presets: ${PRESETS.join(', ')}; or a JSON file (see config/schemas/testbed-topology.ts)` });
}

export function register(program: Command): void {
  const testbed = program.command('testbed').description('an emulated dispersed network on this machine: a namespace, address and Docker engine per host, shaped links (needs root)');

  testbed
    .command('up <topology>')
    .description(`build the testbed from a topology file or a preset (${PRESETS.join(', ')}), start its stack and agents, write its cluster configuration`)
    .option('--dir <folder>', DIR_HELP)
    .option('--agent-wait <seconds>', 'wait this long for every agent\'s heartbeat', '90')
    .action(action(async (arg: string, flags: { dir?: string; agentWait: string }) => {
      const wait = Number(flags.agentWait);
      if (!(wait > 0)) throw inputError(`--agent-wait must be a positive number of seconds, got ${JSON.stringify(flags.agentWait)}`);
      const topo = await topologyOf(arg);
      const dir = testbedDir(flags.dir);
      const [{ testbedUp }, { createProgress }, { renderHosts }] = await Promise.all([
        import('../../testbed/up.js'), import('../../progress.js'), import('../../testbed/status.js'),
      ]);
      const { state, timings } = await testbedUp(topo, dir, createProgress(), { agentWaitSec: wait });
      const cfg = displayPath(state.configFile);
      const dirFlag = flags.dir ? ` --dir ${flags.dir}` : '';
      process.stdout.write(`testbed ${state.name} is up (${state.net}.0/24, ${state.hosts.length - 1} hosts; network ${(timings.networkMs / 1000).toFixed(1)} s, engines ${(timings.enginesMs / 1000).toFixed(1)} s, stack and agents ${(timings.stackMs / 1000).toFixed(1)} s)\n`);
      process.stdout.write(`${renderHosts(state)}\n`);
      process.stdout.write(`cluster configuration: ${cfg}\n\nUse it:\n  export JUPITER_CONFIG=${state.configFile}\n  jupiter deploy <app> --runtime docker\n  jupiter testbed link <a> <b> --rate 5mbit | --down | --up | --loss 10%${dirFlag}\n  jupiter testbed down${dirFlag}\n`);
    }));

  testbed
    .command('status')
    .description('show the testbed\'s hosts, engines and changed or faulty links')
    .option('--dir <folder>', DIR_HELP)
    .action(action(async (flags: { dir?: string }) => {
      const dir = testbedDir(flags.dir);
      const state = requireTestbedState(dir);
      const { renderHosts, renderLinks } = await import('../../testbed/status.js');
      process.stdout.write(`testbed ${state.name} (jtb${state.id}) in ${displayPath(dir)}${state.complete ? '' : ' — INCOMPLETE: `jupiter testbed down` removes it'}\nsubnet ${state.net}.0/24, bridge ${state.bridge}, cluster configuration ${displayPath(state.configFile)}\n`);
      process.stdout.write(`${renderHosts(state)}\n${renderLinks(state)}\nagents: JUPITER_CONFIG=${state.configFile} jupiter stack status\n`);
    }));

  testbed
    .command('link <a> <b>')
    .description('change the link between two hosts live: its rate, cut it, restore it, or make it lossy')
    .option('--rate <rate>', 'new rate, e.g. 5mbit, 500kbit, 1gbit')
    .option('--down', 'cut the link (every packet dropped both ways)')
    .option('--up', 'restore a cut link')
    .option('--loss <percent>', 'drop this share of packets at random (0% removes it)')
    .option('--one-way', 'change only the direction from <a> to <b>')
    .option('--dir <folder>', DIR_HELP)
    .action(action(async (a: string, b: string, flags: { rate?: string; down?: boolean; up?: boolean; loss?: string; oneWay?: boolean; dir?: string }) => {
      const dir = testbedDir(flags.dir);
      const state = requireTestbedState(dir);
      const [{ changeLink }, { checkTestbedHost }] = await Promise.all([import('../../testbed/link.js'), import('../../testbed/preflight.js')]);
      checkTestbedHost();
      for (const line of changeLink(dir, state, a, b, flags)) process.stdout.write(`${line}\n`);
    }));

  testbed
    .command('down')
    .description('remove everything the testbed made: stack, engines and containers, Redis, namespaces, veths, bridge, qdiscs, rules, files')
    .option('--dir <folder>', DIR_HELP)
    .option('--id <id>', 'the testbed jtb<id> (as `status` and the bridge name show it), when its folder was deleted')
    .action(action(async (flags: { dir?: string; id?: string }) => {
      if (flags.id !== undefined && flags.dir !== undefined) throw inputError('give --dir or --id, not both', { hint: '--id is for a testbed whose folder is gone' });
      const state = flags.id !== undefined ? requireTestbedById(flags.id.replace(/^jtb/, '')) : requireTestbedState(testbedDir(flags.dir));
      const dir = flags.id !== undefined ? folderOf(state) : testbedDir(flags.dir);
      const [{ testbedDown }, { createProgress }, { checkTestbedHost }] = await Promise.all([
        import('../../testbed/down.js'), import('../../progress.js'), import('../../testbed/preflight.js'),
      ]);
      checkTestbedHost();
      for (const line of await testbedDown(dir, createProgress(), state)) process.stdout.write(`${line}\n`);
    }));
}
