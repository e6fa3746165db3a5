#!/usr/bin/env bash
# Idempotent set-up for a Debian machine with Node 20: system packages that are missing
# (when apt-get is available and we are root), npm dependencies, and the build.
# Usage: scripts/setup.sh [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."
QUIET=${1:-}
say() { [ "$QUIET" = "--quiet" ] || echo "setup: $*"; }

# command -> Debian package providing it
declare -A PKG=(
  [redis-server]=redis-server
  [redis-benchmark]=redis-tools
  [mosquitto]=mosquitto
  [python3]=python3
  [dockerd]=docker.io
  [chromium]=chromium
  [ip]=iproute2
  [tc]=iproute2
  [openssl]=openssl
  [sshd]=openssh-server
)
missing=()
for cmd in "${!PKG[@]}"; do
  if ! command -v "$cmd" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$cmd" ]; then
    missing+=("${PKG[$cmd]}")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    # Jupiter and its tests start their own private servers: keep the packages' system services
    # (redis on 6379, mosquitto on 1883, sshd on 22, dockerd) from starting at install time.
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      policy=/usr/sbin/policy-rc.d
      trap 'rm -f /usr/sbin/policy-rc.d' EXIT
      printf '#!/bin/sh\nexit 101\n' > "$policy"
      chmod +x "$policy"
    fi
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [ -n "$policy" ]; then
      rm -f "$policy"
      trap - EXIT
    fi
  else
    echo "setup: missing packages ${missing[*]} (no root apt-get here); features needing them are skipped" >&2
  fi
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dependencies"
  # `npm install`, not `npm ci`: the lock file lists optional platform builds (msgpackr-extract for
  # darwin/win32) that a mirror may not serve; `npm ci` refuses such a lock, `npm install` skips them.
  npm install --no-audit --no-fund --loglevel=error
fi

say "building"
npx tsc -p tsconfig.json

# With a Docker engine running, make the local base image for the docker runtime (no registry
# needed); the docker runtime also creates it on first use.
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  say "docker base image"
  bash scripts/docker-base-image.sh >/dev/null
fi
say "ready"
