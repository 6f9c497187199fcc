#!/usr/bin/env bash
# The main job on a fresh machine: install what the cpu and vulkan backends need, build the CLI,
# and run the bundled example model on every built backend, printing device, status, latency and
# error vs PyTorch's output (stored next to the model).
# The cuda and hip backends are compiled only where this machine has their GPU driver
# (`porta devices` lists them as not built otherwise): `scripts/demo.sh --gpu` compiles them
# anyway, and scripts/test.sh always does.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU=()
if [[ "${1:-}" == "--gpu" ]]; then GPU=(--gpu); fi
bash "$ROOT/scripts/setup.sh" --demo
OPTS=()
if [[ ! -f "$ROOT/build/CMakeCache.txt" ]]; then
  # A first build: only the library and the CLI (scripts/test.sh turns the rest on in the same
  # folder when it is run).
  OPTS=(-DPORTA_BUILD_TESTS=OFF -DPORTA_BUILD_BENCH=OFF -DPORTA_BUILD_TORCH=OFF -DPORTA_BUILD_ORT=OFF
        -DPORTA_BUILD_PYTHON=OFF)
fi
PORTA_BUILD_TARGETS=porta_cli bash "$ROOT/scripts/build.sh" "${GPU[@]}" "$ROOT/build" "${OPTS[@]}"
"$ROOT/build/bin/porta" devices
"$ROOT/build/bin/porta" run --device all
