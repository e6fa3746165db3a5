#!/usr/bin/env bash
# Create the registry-free base image `jupiter/base:local` (this machine's node + python3, a
# non-root user jupiter uid 10001) on a Docker engine. Idempotent: skipped when an image with the
# same node/python versions exists. Usage:
#   scripts/docker-base-image.sh [--host unix:///var/run/docker.sock] [--name jupiter/base:local] [--force]
# DOCKER_HOST is honoured when --host is not given.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f dist/circe/runtime/docker-base-main.js ]; then
  echo "building the project first (npx tsc)" >&2
  npx tsc -p tsconfig.json >/dev/null || true
fi
exec node dist/circe/runtime/docker-base-main.js "$@"
