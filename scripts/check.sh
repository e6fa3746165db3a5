#!/usr/bin/env bash
# The whole test suite: set-up (with the test-only packages: mosquitto, chromium, openssh-server,
# iproute2, openssl, redis-tools), lint, typecheck, then every mocha test (unit and integration).
# The last line printed is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check: $1 failed"; echo "0 passed, 1 failed"; exit 1; }
bash scripts/setup.sh --for-tests || fail "setup"
echo "== lint";      npm run --silent lint || fail "lint"
echo "== typecheck"; npm run --silent typecheck || fail "typecheck"
echo "== tests"
npx mocha "dist/test/**/*.test.js"
