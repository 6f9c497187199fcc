#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, and run the bundled example
# model on every built backend, printing device, status, latency and error vs PyTorch.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
bash "$ROOT/scripts/build.sh" "$ROOT/build"
"$ROOT/build/bin/porta" devices
"$ROOT/build/bin/porta" run --device all
