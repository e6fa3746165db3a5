#!/usr/bin/env bash
# The whole test suite: set-up (with the test-only packages: mosquitto, chromium, openssh-server,
# iproute2, openssl, redis-tools), lint and typecheck, then every mocha test (unit and integration).
# The last line printed is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check: $1 failed"; echo "0 passed, 1 failed"; exit 1; }
bash scripts/setup.sh --for-tests || fail "setup"
# Lint and typecheck at once (two cores, each single-threaded); each one's output whole.
echo "== lint and typecheck"
work=$(mktemp -d)
npm run --silent lint > "$work/lint" 2>&1 & lint=$!
npm run --silent typecheck > "$work/typecheck" 2>&1 & typecheck=$!
wait $lint; lint_rc=$?
wait $typecheck; typecheck_rc=$?
cat "$work/lint" "$work/typecheck"; rm -rf "$work"
[ $lint_rc -eq 0 ] || fail "lint"
[ $typecheck_rc -eq 0 ] || fail "typecheck"
echo "== tests"
# Every mocha test file: the network-emulation suites alone, then the rest in two lanes at once
# (test/support/run-suite.ts says why and how); the last line sums them.
node dist/test/support/run-suite.js
