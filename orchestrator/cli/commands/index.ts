// The CLI's command list: one module per command, each exporting `register(program)`.
import type { Command } from 'commander';

export type RegisterCommand = (program: Command) => void;

export const commands: RegisterCommand[] = [
];
