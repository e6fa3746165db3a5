// The alone phase's measuring is over (test/support/run-suite.ts): the suites that run alone
// measure shaped links, probe budgets, how soon a cut is seen and how soon a Redis restart is
// recovered from, and then go on with checks that only wait (on the testbed: a 60-s partition, a
// lost node, a deploy). Once the measurements are done, run-suite may start the two lanes beside
// what is left.
import { writeFileSync } from 'node:fs';

/** Environment variable naming the file run-suite waits for. */
export const MEASURED_DONE_ENV = 'JUPITER_SUITE_MEASURED_DONE';

/** Tell run-suite (when it ran this process) that no later test here measures timing. */
export function measuredPartDone(): void {
  const file = process.env[MEASURED_DONE_ENV];
  if (file) writeFileSync(file, `${new Date().toISOString()}\n`);
}
