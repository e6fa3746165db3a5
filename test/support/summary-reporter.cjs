// Spec output plus the one closing line CI reads: "N passed, N failed".
const Mocha = require('mocha');

class SummaryReporter extends Mocha.reporters.Spec {
  epilogue() {
    super.epilogue();
    const s = this.stats;
    process.stdout.write(`${s.passes} passed, ${s.failures} failed, ${s.pending} skipped\n`);
  }
}
module.exports = SummaryReporter;
