#!/usr/bin/env bash
# The main job on a fresh machine: set up, then deploy an example app on the embedded default
# (local nodes, process runtime, private Redis and MQTT) and wait for every output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
node bin/jupiter.js validate apps/dummy
node bin/jupiter.js graph apps/dummy --format text
