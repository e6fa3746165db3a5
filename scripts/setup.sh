#!/usr/bin/env bash
# Idempotent set-up for a Debian machine with Node 20: system packages that are missing
# (when apt-get is available and we are root), npm dependencies (`npm ci` from the lock file),
# the build, and `jupiter` on the PATH. Each step prints what it does and how long it took.
# Usage: scripts/setup.sh [--quiet] [--for-tests] [--list]
#   --for-tests  also the packages only the test suite uses (scripts/check.sh passes it)
#   --list       print the Debian packages this would check for (one per line) and stop
# JUPITER_BIN_DIR=<folder> puts the `jupiter` link there instead (default below).
set -euo pipefail
cd "$(dirname "$0")/.."
QUIET=""
FOR_TESTS=""
LIST=""
for a in "$@"; do
  case "$a" in
    --quiet) QUIET=1 ;;
    --for-tests) FOR_TESTS=1 ;;
    --list) LIST=1 ;;
    *) echo "setup: unknown option $a (use --quiet, --for-tests, --list)" >&2; exit 2 ;;
  esac
done
say() { [ -n "$QUIET" ] || echo "setup: $*"; }
T0=$SECONDS
step_start() { STEP_T=$SECONDS; say "$1 …"; }
step_done() { say "  done: $1 ($((SECONDS - STEP_T)) s)"; }

# command -> Debian package providing it. Jupiter itself needs these:
declare -A PKG=(
  [redis-server]=redis-server   # the private Redis of the embedded stack
  [python3]=python3             # Python tasks
  [dockerd]=docker.io           # the docker runtime (Jupiter starts a private engine when none runs)
)
# Only the tests (and benches) use these: a real broker, browser, sshd, tc/netns, TLS certificates.
declare -A TEST_PKG=(
  [redis-benchmark]=redis-tools
  [mosquitto]=mosquitto
  [chromium]=chromium
  [ip]=iproute2
  [tc]=iproute2
  [openssl]=openssl
  [sshd]=openssh-server
)
if [ -n "$LIST" ]; then
  { printf '%s\n' "${PKG[@]}"; [ -z "$FOR_TESTS" ] || printf '%s\n' "${TEST_PKG[@]}"; } | sort -u
  exit 0
fi
missing=()
check() { # $1: command, $2: package
  if ! command -v "$1" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$1" ]; then missing+=("$2"); fi
}
for cmd in "${!PKG[@]}"; do check "$cmd" "${PKG[$cmd]}"; done
if [ -n "$FOR_TESTS" ]; then for cmd in "${!TEST_PKG[@]}"; do check "$cmd" "${TEST_PKG[$cmd]}"; done; fi
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    export DEBIAN_FRONTEND=noninteractive
    say "Debian packages to install${FOR_TESTS:+ (with the test-only ones)}: ${missing[*]}"
    step_start "apt-get update"
    apt-get update -qq >/dev/null
    step_done "package lists"
    # Jupiter and its tests start their own private servers: keep the packages' system services
    # (redis on 6379, mosquitto on 1883, sshd on 22, dockerd) from starting at install time.
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      policy=/usr/sbin/policy-rc.d
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
      printf '#!/bin/sh\nexit 101\n' > "$policy"
      chmod +x "$policy"
    fi
    # One package at a time, so a cold machine shows where the minutes go (chromium, docker.io).
    for p in "${missing[@]}"; do
      step_start "installing $p"
      apt-get install -y -qq --no-install-recommends "$p" >/dev/null
      step_done "$p"
    done
    if [ -n "$policy" ]; then
      rm -f "$policy"
      trap - EXIT
    fi
  else
    echo "setup: missing packages ${missing[*]} (no root apt-get here); features needing them are skipped" >&2
  fi
fi

if [ -L node_modules ]; then
  # A link to an install shared with other checkouts: `npm ci` would replace it for all of them.
  say "node_modules links to a shared install: left as it is"
elif [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  if [ -f package-lock.json ]; then
    step_start "installing npm dependencies (npm ci, from package-lock.json)"
    npm ci --no-audit --no-fund --loglevel=error
  else
    step_start "installing npm dependencies (npm install)"
    npm install --no-audit --no-fund --loglevel=error
  fi
  step_done "node_modules"
fi

step_start "building (tsc)"
npx tsc -p tsconfig.json
step_done "dist/"

# `jupiter` on the PATH, so the commands Jupiter prints work as printed. As root: a link in
# /usr/local/bin (the last checkout set up wins); otherwise in ~/.local/bin when that is on the PATH.
bin="$(pwd)/bin/jupiter.js"
chmod +x "$bin"
link=""
if [ -n "${JUPITER_BIN_DIR:-}" ]; then
  link="$JUPITER_BIN_DIR/jupiter"
elif [ "$(id -u)" = "0" ] && [ -d /usr/local/bin ]; then
  link=/usr/local/bin/jupiter
elif [[ ":$PATH:" == *":$HOME/.local/bin:"* ]]; then
  link="$HOME/.local/bin/jupiter"
fi
if [ -n "$link" ] && { [ ! -e "$link" ] || [ -L "$link" ]; }; then
  mkdir -p "$(dirname "$link")"
  ln -sfn "$bin" "$link"
  say "jupiter on the PATH: $link -> $bin"
else
  say "jupiter is not on the PATH (not root, and no ~/.local/bin on the PATH): run it as \`node $bin\`, or link it: ln -s $bin <a folder on your PATH>/jupiter"
fi

# With a Docker engine running, make the local base image for the docker runtime (no registry
# needed); the docker runtime also creates it on first use (and the embedded stack in its private engine).
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  step_start "docker base image"
  bash scripts/docker-base-image.sh >/dev/null
  step_done "jupiter/base:local"
fi
say "ready ($((SECONDS - T0)) s)"
