// Entry point of the `jupiter` CLI. Each command lives in its own module under commands/.
import { Command, CommanderError } from 'commander';
import { readFileSync } from 'node:fs';
import { commands } from './commands/index.js';
import { reportAndExit } from './run.js';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };

export function buildProgram(): Command {
  const program = new Command('jupiter')
    .description('Place a DAG application across edge, fog and cloud nodes and run it as a stream')
    .version(pkg.version, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of commands) register(program);
  // Every subcommand gets --version too, and usage errors exit 2 like other bad input.
  for (const sub of program.commands) sub.version(pkg.version, '-V, --version').exitOverride();
  return program;
}

async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      const ok = e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help';
      process.exit(ok ? 0 : 2);
    }
    reportAndExit(e);
  }
}

await main(process.argv);
