#!/usr/bin/env bash
# The main job on the built-in default model: a deterministic random s1-pico answers the
# Flappy Drone example request. Expects tools/setup.sh to have built ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
build/skycmd decide --random s1-pico --pretty examples/flappy-drone.json
