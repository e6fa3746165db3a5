// Spec output plus the one closing line CI reads: "N passed, N failed".
// Before it, the slowest test files by wall time (hooks included: engines, stacks, testbeds), so
// that the suite's 25-minute budget shows where it goes. With JUPITER_TEST_REPORT=<file> the
// counts, every file's time and each failure (title, file, first lines of its error) are also
// written there as JSON: run-suite.ts reads them and repeats the failures last, where a CI log
// that keeps only its tail still shows them.
const Mocha = require('mocha');
const { writeFileSync } = require('node:fs');

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_TEST_FAIL } = Mocha.Runner.constants;
const SHOWN = 15;

class SummaryReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    this.fileTimes = new Map();
    this.failed = [];
    runner.on(EVENT_TEST_FAIL, (test, err) => {
      const file = (test.file ?? '').replace(/^.*?dist\//, '');
      const error = String(err?.stack ?? err?.message ?? err).split('\n').slice(0, 6).join('\n');
      this.failed.push({ title: test.fullTitle(), file, error });
    });
    const started = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.parent?.root && suite.file) started.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const t0 = started.get(suite);
      if (t0 === undefined) return;
      const file = suite.file.replace(/^.*?dist\//, '');
      this.fileTimes.set(file, (this.fileTimes.get(file) ?? 0) + Date.now() - t0);
    });
  }

  epilogue() {
    super.epilogue();
    const rows = [...this.fileTimes].sort((a, b) => b[1] - a[1]);
    const total = rows.reduce((sum, [, ms]) => sum + ms, 0);
    process.stdout.write(`slowest test files (wall time with hooks; all files ${(total / 1000).toFixed(0)} s):\n`);
    for (const [file, ms] of rows.slice(0, SHOWN)) {
      process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${file}\n`);
    }
    const s = this.stats;
    if (process.env.JUPITER_TEST_REPORT) {
      const seconds = Object.fromEntries(rows.map(([file, ms]) => [file, Math.round(ms / 100) / 10]));
      writeFileSync(process.env.JUPITER_TEST_REPORT, `${JSON.stringify({ passes: s.passes, failures: s.failures, pending: s.pending, seconds, failed: this.failed }, null, 2)}\n`);
    }
    // Skipped tests are counted on a line of their own: the last line is exactly the one CI reads.
    if (s.pending > 0) process.stdout.write(`${s.pending} skipped\n`);
    process.stdout.write(`${s.passes} passed, ${s.failures} failed\n`);
  }
}
module.exports = SummaryReporter;
