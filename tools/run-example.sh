#!/usr/bin/env bash
# The main job on the built-in default model: a deterministic random s1-pico answers the
# Flappy Drone example request. Expects tools/setup.sh to have built ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${SKYCMD_MODEL:-build/s1-pico.gguf}
[ -f "$model" ] || build/skycmd random s1-pico "$model"
build/skycmd decide "$model" examples/flappy-drone.json
