// Paths in the checkout, valid from dist/test as from test/.
import { fileURLToPath } from 'node:url';
import { dirname, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir);
  return dir;
}

export const repoRoot = findRoot();
export const appsDir = resolve(repoRoot, 'apps');
export const fixturesDir = resolve(repoRoot, 'test/fixtures');
export const cliPath = resolve(repoRoot, 'bin/jupiter.js');
