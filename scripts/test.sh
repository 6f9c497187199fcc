#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite with ctest.
# Usage: scripts/test.sh            normal (Release) build in build/
#        scripts/test.sh --sanitize AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
if [[ "${1:-}" == "--sanitize" ]]; then
  BUILD="$ROOT/build-asan"
  PORTA_BUILD_TYPE=RelWithDebInfo bash "$ROOT/scripts/build.sh" "$BUILD" -DPORTA_SANITIZE=ON \
    -DPORTA_BUILD_BENCH=OFF -DPORTA_BUILD_TORCH=OFF -DPORTA_BACKENDS="${PORTA_SANITIZE_BACKENDS:-cpu;vulkan}"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:suppressions=$ROOT/scripts/sanitizers/asan.supp"
  export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitizers/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/scripts/sanitizers/ubsan.supp"
else
  BUILD="$ROOT/build"
  # PORTA_CMAKE_ARGS: extra configure arguments (CI narrows the GPU architectures with it).
  # shellcheck disable=SC2086
  bash "$ROOT/scripts/build.sh" "$BUILD" ${PORTA_CMAKE_ARGS:-}
fi
cd "$BUILD"
ctest --output-on-failure -j "${PORTA_TEST_JOBS:-$(nproc)}" --timeout 900
