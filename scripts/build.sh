#!/usr/bin/env bash
# Configures and builds porta into a build folder.
# Usage: scripts/build.sh [--gpu] [BUILD_DIR] [extra cmake args...]   (PORTA_JOBS, PORTA_BUILD_TARGETS)
# The cuda and hip backends are built when their toolchains are found and this machine has the
# GPU driver to run them; --gpu builds them wherever the toolchains are (-DPORTA_BUILD_GPU=ON).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GPU=()
if [[ "${1:-}" == "--gpu" ]]; then
  GPU=(-DPORTA_BUILD_GPU=ON)
  shift
fi
BUILD="${1:-$ROOT/build}"
shift || true
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
            -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, so clones in other folders share cached objects.
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
  ccache --max-size=8G >/dev/null 2>&1 || true
fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE="${PORTA_BUILD_TYPE:-Release}" "${LAUNCHER[@]}" "${GPU[@]}" "$@"
# PORTA_BUILD_TARGETS: build only these targets (the TSan run needs the library and porta_tests).
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "${PORTA_JOBS:-$(nproc)}" ${PORTA_BUILD_TARGETS:+--target $PORTA_BUILD_TARGETS}
