#!/usr/bin/env bash
# The main job on a fresh machine: set up, then deploy an example app on the embedded default
# (local nodes, process runtime, private Redis and MQTT) and wait for every output.
# Usage: scripts/demo.sh [app]   (default: dummy)
set -euo pipefail
cd "$(dirname "$0")/.."
APP=${1:-dummy}
bash scripts/setup.sh
node bin/jupiter.js validate "apps/$APP"
node bin/jupiter.js graph "apps/$APP" --format text
node bin/jupiter.js deploy "$APP" --wait
echo
# setup.sh put `jupiter` on the PATH when it could; otherwise show the form that works here.
J=jupiter
[ "$(command -v jupiter 2>/dev/null || true)" -ef bin/jupiter.js ] || J="node bin/jupiter.js"
echo "The deployment keeps running: try '$J status $APP', '$J submit $APP apps/$APP/sample_input/*',"
echo "then '$J teardown $APP --stack' to remove it and stop the private services."
