// The `adapt` and `profiling` sections of jupiter.config.json (validated with the rest of the
// file by cluster-config.ts, so a bad value is reported with its file and line).
//   "adapt": { "mode": "suggest", "threshold": 0.2, "holdSec": 30 }
//   "profiling": { "probeBudget": 0.02 }
export const adaptSectionSchema = {
  type: 'object',
  description: 'adaptive placement: re-map when a better mapping is predicted (orchestrator/adapt)',
  properties: {
    mode: { enum: ['off', 'suggest', 'auto'], description: '"off"; "suggest" (default): publish the better mapping and its predicted gain; "auto": also move the tasks' },
    threshold: { type: 'number', exclusiveMinimum: 0, maximum: 1, description: 'predicted makespan gain that counts, as a fraction (default 0.2 = 20%)' },
    holdSec: { type: 'number', minimum: 0, maximum: 86400, description: 'how long the gain must last before acting, seconds (default 30)' },
  },
  additionalProperties: false,
} as const;

export const profilingSectionSchema = {
  type: 'object',
  description: 'node agents\' profiling',
  properties: {
    probeBudget: { type: 'number', exclusiveMinimum: 0, maximum: 1, description: 'share of each link\'s measured capacity its steady probes may use (default 0.02 = 2%)' },
  },
  additionalProperties: false,
} as const;

export interface AdaptSectionFile {
  mode?: 'off' | 'suggest' | 'auto';
  threshold?: number;
  holdSec?: number;
}

export interface ProfilingSectionFile {
  probeBudget?: number;
}
