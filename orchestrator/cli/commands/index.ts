// The CLI's command list: one module per command, each exporting `register(program)`.
import type { Command } from 'commander';
import { register as validate } from './validate.js';
import { register as graph } from './graph.js';
import { register as agent } from './agent.js';
import { register as profile } from './profile.js';
import { register as map } from './map.js';
import { register as viz } from './viz.js';
import { register as deploy } from './deploy.js';
import { register as submit } from './submit.js';
import { register as status } from './status.js';
import { register as logs } from './logs.js';
import { register as teardown } from './teardown.js';
import { register as stack } from './stack.js';
import { register as remap } from './remap.js';

export type RegisterCommand = (program: Command) => void;

// In the order a user meets them: check an app, see where it would go, run it, watch it.
export const commands: RegisterCommand[] = [
  validate,
  graph,
  map,
  deploy,
  submit,
  status,
  logs,
  teardown,
  remap,
  profile,
  agent,
  viz,
  stack,
];
