// The `adapt` and `profiling` sections of jupiter.config.json (validated with the rest of the
// file by cluster-config.ts, so a bad value is reported with its file and line).
//   "adapt": { "mode": "suggest", "threshold": 0.2, "holdSec": 30 }
//   "profiling": { "probeBudget": 0.02, "probeSizesKb": [10, 100, 1000], "bootstrapRounds": 2, "refreshSec": 3, "probeTimeoutSec": 3 }
// (the agents that `stack up` starts get these as the `jupiter agent` flags of the same names)
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
  description: 'node agents\' profiling (the agents `stack up` starts get these as `jupiter agent` flags)',
  properties: {
    probeBudget: { type: 'number', exclusiveMinimum: 0, maximum: 1, description: 'share of each link\'s measured capacity its steady probes may use (default 0.02 = 2%)' },
      probeSizesKb: { type: 'array', items: { type: 'number', exclusiveMinimum: 0, maximum: 65536 }, minItems: 1, maxItems: 16, description: 'probe sizes in KB (default 1,10,100,1000,10000)' },
      bootstrapRounds: { type: 'integer', minimum: 1, maximum: 10, description: 'times the start-up burst sends every size to every peer (default 3)' },
      refreshSec: { type: 'number', exclusiveMinimum: 0, maximum: 86400, description: 'period of the steady-state probe round in seconds (default 60)' },
      probeTimeoutSec: { type: 'number', exclusiveMinimum: 0, maximum: 3600, description: 'a probe taking longer fails: how soon a cut link shows (default 60)' },
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
  probeSizesKb?: number[];
  bootstrapRounds?: number;
  refreshSec?: number;
  probeTimeoutSec?: number;
}
