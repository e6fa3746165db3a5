// The set-up a new user runs: the lock file is complete (what `npm ci` requires: every dependency
// of every locked package, optional platform builds included, has its own entry); scripts/setup.sh
// checks for the test-only Debian packages only with --for-tests (check.sh passes it), prints each
// step with its duration, and puts `jupiter` on the PATH.
import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../support/paths.js';

interface LockEntry { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }

/** npm's lookup: node_modules/<name> next to the package, then in each folder above it. */
function resolves(packages: Record<string, LockEntry>, from: string, name: string): boolean {
  let base = from;
  for (;;) {
    if (packages[`${base ? `${base}/` : ''}node_modules/${name}`]) return true;
    if (!base) return false;
    const i = base.lastIndexOf('/node_modules/');
    base = i < 0 ? '' : base.slice(0, i);
  }
}

function sh(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => execFile(cmd, args, { ...opts, env: { ...process.env, ...opts.env }, timeout: 280_000 }, (e, so, se) => {
    // A process killed by the time limit has no exit code: count it as a failure, not as 0.
    const err = e as { code?: unknown; signal?: string } | null;
    const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
    resolve({ code, out: `${so}${se}${err?.signal ? `\n(killed by ${err.signal})` : ''}` });
  }));
}

describe('set-up: package-lock.json is complete for npm ci', function () {
  this.timeout(60_000);
  it('every dependency and optional dependency of every locked package has an entry', () => {
    const lock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
    const missing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      for (const name of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
        if (!resolves(lock.packages, path, name)) missing.push(`${path || '(root)'} -> ${name}`);
      }
    }
    expect(missing, 'regenerate the lock: npm install --package-lock-only').to.deep.equal([]);
  });

  it('npm ci itself accepts it (dry run, offline: npm\'s own lock check, nothing downloaded)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'jupiter-npm-ci-'));
    try {
      for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(repoRoot, f), join(dir, f));
      const r = await sh('npm', ['ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir });
      expect(r.code, r.out).to.equal(0);
      expect(r.out).to.not.match(/in sync|Missing:/);
      expect(r.out).to.match(/added \d+ packages/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('set-up: scripts/setup.sh', function () {
  this.timeout(300_000); // a build from scratch in a clone takes a while on a loaded 2-core machine
  const testOnly = ['openssh-server', 'mosquitto', 'chromium', 'iproute2', 'openssl', 'redis-tools'];

  it('checks for test-only packages only with --for-tests, which check.sh passes', async () => {
    const plain = await sh('bash', ['scripts/setup.sh', '--list'], { cwd: repoRoot });
    expect(plain.out.trim().split('\n')).to.deep.equal(['docker.io', 'python3', 'redis-server']);
    const tests = await sh('bash', ['scripts/setup.sh', '--list', '--for-tests'], { cwd: repoRoot });
    expect(tests.out.trim().split('\n')).to.include.members(testOnly);
    expect(readFileSync(join(repoRoot, 'scripts/check.sh'), 'utf8')).to.include('scripts/setup.sh --for-tests');
    const bad = await sh('bash', ['scripts/setup.sh', '--bogus'], { cwd: repoRoot });
    expect(bad.code).to.equal(2);
    expect(bad.out).to.include('unknown option --bogus');
  });

  it('in a clone: prints every step with its time and links a working `jupiter` onto the PATH', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'jupiter-setup-'));
    try {
      const clone = join(dir, 'clone');
      execFileSync('git', ['clone', '--quiet', repoRoot, clone]);
      // The installed dependencies of this checkout (setup leaves a linked node_modules alone).
      symlinkSync(realpathSync(join(repoRoot, 'node_modules')), join(clone, 'node_modules'));
      const bin = join(dir, 'bin');
      const r = await sh('bash', ['scripts/setup.sh'], { cwd: clone, env: { JUPITER_BIN_DIR: bin } });
      expect(r.code, r.out).to.equal(0);
      expect(r.out).to.match(/setup: building \(tsc\) …\n[\s\S]*setup: +done: dist\/ \(\d+ s\)/);
      expect(r.out).to.include(`setup: jupiter on the PATH: ${bin}/jupiter -> ${clone}/bin/jupiter.js`);
      expect(r.out).to.match(/setup: ready \(\d+ s\)\n/);
      const v = await sh('jupiter', ['--help'], { cwd: dir, env: { PATH: `${bin}:${process.env.PATH}` } });
      expect(v.code, v.out).to.equal(0);
      expect(v.out).to.include('teardown');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
