#!/usr/bin/env bash
# The main job on the built-in default model: the trained s1-pico-flappy (models/, made by
# tools/train/train.py with laya's own training loop) answers the Flappy Drone example
# request. Expects tools/setup.sh to have built ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
build/skycmd decide --pretty examples/flappy-drone.json
