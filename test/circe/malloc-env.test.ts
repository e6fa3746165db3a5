// The malloc settings every process Jupiter starts gets (circe/runtime/malloc-env.ts); that the
// process runtime's runners carry them is checked in process-runtime.test.ts.
import { expect } from 'chai';
import { MALLOC_ENV, withMallocEnv } from '../../circe/runtime/malloc-env.js';
import { runnerEnv } from '../../circe/runtime/docker-container.js';
import type { RunnerSpec } from '../../circe/runtime/types.js';

describe('circe runtime: malloc settings of the processes Jupiter starts', () => {
  it('adds both settings to an environment without them, keeps the rest', () => {
    const env = withMallocEnv({ PATH: '/bin' });
    expect(env).to.deep.equal({ PATH: '/bin', MALLOC_MMAP_THRESHOLD_: String(16 * 1024 * 1024), MALLOC_TRIM_THRESHOLD_: String(32 * 1024 * 1024) });
  });

  it("keeps a setting the user's environment has", () => {
    const env = withMallocEnv({ MALLOC_TRIM_THRESHOLD_: '1' });
    expect(env.MALLOC_TRIM_THRESHOLD_).to.equal('1');
    expect(env.MALLOC_MMAP_THRESHOLD_).to.equal(MALLOC_ENV.MALLOC_MMAP_THRESHOLD_);
  });

  it('a runner container gets them too', () => {
    const spec: RunnerSpec = { app: 'a', task: 't', node: 'n', runId: 'r', redisUrl: 'redis://127.0.0.1:6379', redisPrefix: 'p:' };
    expect(runnerEnv(spec, 'host')).to.include.members(Object.entries(MALLOC_ENV).map(([k, v]) => `${k}=${v}`));
  });
});
