#!/usr/bin/env bash
# Runs the conformance suite, the GPU backend suites and ONNX's node cases on the SIMT emulator
# (gpu_emu:0, warp 32, and gpu_emu:1, warp 64) and checks that every __global__ kernel under
# kernels/cuda was launched at both warp widths. Needs a build with PORTA_BACKENDS=...;gpu_emu.
# Usage: scripts/gpu-emu-coverage.sh [BUILD_DIR]
#        scripts/gpu-emu-coverage.sh --logs DIR   only the check, over the launch logs in DIR
#                                                 (ctest's gpu_emu.kernel_coverage: the suites'
#                                                 runs in that ctest run wrote them)
#        scripts/gpu-emu-coverage.sh --reset DIR  empties DIR (ctest's gpu_emu.kernel_log_reset)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${1:-}" == "--reset" ]]; then
  rm -rf "${2:?}" && mkdir -p "$2"
  exit 0
fi
LOG="$(mktemp)"
trap 'rm -f "$LOG" "$LOG".*' EXIT
if [[ "${1:-}" == "--logs" ]]; then
  [[ -d "${2:-}" ]] || { echo "gpu-emu-coverage: no log folder ${2:-} (run the gpu_emu tests first)" >&2; exit 2; }
  cat "$2"/*.log > "$LOG" 2>/dev/null || true
else
  BUILD="${1:-$ROOT/build}"
  TESTS="$BUILD/bin/porta_tests"
  [[ -x "$TESTS" ]] || { echo "gpu-emu-coverage: no $TESTS (build porta_tests first)" >&2; exit 2; }
  export PORTA_GPU_EMU_KERNEL_LOG="$LOG"
  "$TESTS" --gtest_filter='Ops/Conformance.*gpu_emu*:Backends/Gpu*:Warps/GpuEmu.*' --gtest_brief=1
  for device in gpu_emu:0 gpu_emu:1; do
    PORTA_ONNX_NODE_DEVICE=$device "$TESTS" --gtest_filter='OnnxNode.*' --gtest_brief=1
  done
fi
# Kernel names from the sources: the identifier before '(' on a __global__ line or the next.
grep -h -A1 '__global__' "$ROOT"/kernels/cuda/*.cu "$ROOT"/kernels/cuda/*.cuh |
  sed 's/__launch_bounds__([^)]*)//' | grep -oE '\b[A-Za-z_][A-Za-z0-9_]*\(' |
  sed 's/($//' | grep -vxE 'sizeof|void|static_cast' | sort -u > "$LOG.all"
status=0
for warp in 32 64; do
  grep " warp $warp\$" "$LOG" | sed 's/<.*//; s/ warp.*//; s/^.*:://' | sort -u > "$LOG.$warp"
  missing="$(comm -23 "$LOG.all" "$LOG.$warp")"
  if [[ -n "$missing" ]]; then
    echo "gpu-emu-coverage: kernels never launched at warp $warp:" $missing
    status=1
  fi
done
echo "gpu-emu-coverage: $(wc -l < "$LOG.all") kernels in kernels/cuda; launched at warp 32:" \
  "$(comm -12 "$LOG.all" "$LOG.32" | wc -l), at warp 64: $(comm -12 "$LOG.all" "$LOG.64" | wc -l)"
exit $status
