#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite with ctest.
# Usage: scripts/test.sh            normal (Release) build in build/
#        scripts/test.sh --sanitize AddressSanitizer + UndefinedBehaviorSanitizer build in build-asan/
#        scripts/test.sh --tsan     ThreadSanitizer build in build-tsan/: the threaded suites only
#                                   (Concurrency.*, Dispatch.*; see tests/CMakeLists.txt)
# The sanitizer option settings are the ones CMakePresets.json's test presets use.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
CTEST_ARGS=()
if [[ "${1:-}" == "--sanitize" ]]; then
  BUILD="$ROOT/build-asan"
  PORTA_BUILD_TYPE=RelWithDebInfo bash "$ROOT/scripts/build.sh" "$BUILD" -DPORTA_SANITIZE=ON \
    -DPORTA_BUILD_BENCH=OFF -DPORTA_BUILD_TORCH=OFF -DPORTA_BACKENDS="${PORTA_SANITIZE_BACKENDS:-cpu;vulkan}"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:suppressions=$ROOT/scripts/sanitizers/asan.supp"
  export LSAN_OPTIONS="suppressions=$ROOT/scripts/sanitizers/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/scripts/sanitizers/ubsan.supp"
elif [[ "${1:-}" == "--tsan" ]]; then
  BUILD="$ROOT/build-tsan"
  PORTA_BUILD_TYPE=RelWithDebInfo PORTA_BUILD_TARGETS=porta_tests bash "$ROOT/scripts/build.sh" "$BUILD" -DPORTA_TSAN=ON \
    -DPORTA_BUILD_BENCH=OFF -DPORTA_BUILD_TORCH=OFF -DPORTA_BACKENDS="${PORTA_SANITIZE_BACKENDS:-cpu;vulkan}"
  # halt_on_error: the first report fails the test. libgomp is not built with TSan, so its
  # barriers are invisible to it: one OpenMP thread per team keeps its threads out of the run.
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$ROOT/scripts/sanitizers/tsan.supp"
  export OMP_NUM_THREADS=1
  CTEST_ARGS=(-R "^(Concurrency|Dispatch|Tensor|Replay)$")
else
  BUILD="$ROOT/build"
  # PORTA_CMAKE_ARGS: extra configure arguments (CI narrows the GPU architectures with it).
  # The whole suite includes the SIMT emulator's (gpu_emu: the cuda/hip kernels run on the cpu
  # at warp 32 and 64), which a plain `auto` build leaves out.
  # --gpu: every GPU source is compiled (cuda, hip) whether or not this machine has a driver.
  # The options that scripts/demo.sh turns off in the same folder are turned on again.
  # shellcheck disable=SC2086
  bash "$ROOT/scripts/build.sh" --gpu "$BUILD" "-DPORTA_BACKENDS=auto;gpu_emu" \
    -DPORTA_BUILD_TESTS=ON -DPORTA_BUILD_BENCH=ON -DPORTA_BUILD_TORCH=ON -DPORTA_BUILD_ORT=ON \
    -DPORTA_BUILD_PYTHON=ON ${PORTA_CMAKE_ARGS:-}
fi
cd "$BUILD"
# --no-tests=error: a build whose test list cannot be read (e.g. the binary crashes at start)
# must fail, not pass with nothing run.
ctest --output-on-failure --no-tests=error -j "${PORTA_TEST_JOBS:-$(nproc)}" --timeout 900 "${CTEST_ARGS[@]}"
