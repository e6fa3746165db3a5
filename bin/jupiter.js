#!/usr/bin/env node
// The CLI runs from the compiled output: `npm run build` (done by scripts/setup.sh) creates dist/.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const main = fileURLToPath(new URL('../dist/orchestrator/cli/main.js', import.meta.url));
if (!existsSync(main)) {
  process.stderr.write('jupiter: not built yet; run `npm run setup` (or `npm run build`) first\n');
  process.exit(1);
}
await import(main);
