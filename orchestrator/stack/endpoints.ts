// Where the embedded stack's services are, read from its state file without starting anything
// (cheap: commands that only look use this, not embedded.ts).
import type { ClusterConfig } from '../../config/types.js';
import { isAlive, readStackState, stateDir } from './state.js';

export interface StackEndpoints {
  redisUrl: string;
  mqttUrl?: string;
  mqttWsUrl?: string;
  /** Login of the embedded broker (undefined for a configured broker: its own settings apply). */
  mqttUsername?: string;
  mqttPassword?: string;
  dashboardUrl?: string;
  /** true when this call started something. */
  started: boolean;
}

/** Read where the running stack is, without starting anything. */
export function stackEndpoints(cluster: ClusterConfig): Omit<StackEndpoints, 'started'> | undefined {
  const state = readStackState(stateDir(cluster.stateDir));
  const redisUrl = cluster.redisUrl ?? (state.redis && isAlive(state.redis.pid) ? state.redis.url : undefined);
  if (!redisUrl) return undefined;
  const hubUp = state.hub && isAlive(state.hub.pid);
  return {
    redisUrl,
    mqttUrl: hubUp ? state.hub!.mqttUrl : cluster.mqtt.url,
    mqttWsUrl: hubUp ? state.hub!.mqttWsUrl || undefined : undefined,
    mqttUsername: hubUp ? state.hub!.mqttUsername : undefined,
    mqttPassword: hubUp ? state.hub!.mqttPassword : undefined,
    dashboardUrl: hubUp ? state.hub!.httpUrl : undefined,
  };
}
