// The inbox message types a node agent understands.
import type { MessageHandler } from './agent.js';
import { handleExecProfile } from '../exec/handler.js';
import { handleWaveAssign } from '../wave/handler.js';

export function defaultHandlers(): Record<string, MessageHandler> {
  return {
    'exec-profile': handleExecProfile,
    'wave-assign': handleWaveAssign,
  };
}
