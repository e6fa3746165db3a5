// The "waiting for outputs" step of deploy and submit: its line says how the items ended
// (done / failed / dead-lettered), and it ends with ✖ when any did not deliver.
import { tally, tallyText, type ItemResult, type WaitOptions } from '../../circe/home/wait.js';
import type { Progress } from '../progress.js';

export async function waitStep(progress: Progress, title: string, total: number, wait: (onProgress: NonNullable<WaitOptions['onProgress']>) => Promise<ItemResult[]>): Promise<ItemResult[]> {
  const step = progress.step(title);
  try {
    const results = await wait((_finished, all, t) => step.update(tallyText(t, all)));
    const t = tally(results);
    if (t.failed + t.deadLettered > 0) step.fail(tallyText(t, total));
    else step.done(tallyText(t, total));
    return results;
  } catch (e) {
    step.fail();
    throw e;
  }
}
