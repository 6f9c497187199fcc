#!/usr/bin/env bash
# porta — the whole GPU check on an NVIDIA machine, in one go (target: under 8 minutes on an
# H200 with 16 cores):
#   1. configure and build for the GPU present (its compute capability only, e.g. sm_90);
#   2. the conformance suite and the GPU backend tests on cuda:0;
#   3. compute-sanitizer memcheck and racecheck over the cuda:0 conformance cases;
#   4. the example models on cpu and cuda:0 (porta run, compared with PyTorch's outputs);
#   5. the GPU performance checks (tests/gpu_perf_test.cpp);
#   6. a results table, printed and written to $OUT/gpu-check.md (or build-gpu/gpu-check.md).
# Every stage runs even when an earlier one fails; the exit status says whether all passed.
# Dependencies missing from the machine's image can be brought as .deb files (scripts/gpu-deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${PORTA_GPU_BUILD:-$ROOT/build-gpu}
OUT_DIR=${OUT:-$BUILD}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$BUILD" "$OUT_DIR"
LOG=$OUT_DIR/gpu-check.log
: >"$LOG"
RESULTS=()
FAILED=0
stage() { echo; echo "=== [$(date +%T)] $*" | tee -a "$LOG"; }
# run NAME LIMIT_S CMD...: runs a stage with a time limit, records pass/fail and its duration.
run() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  stage "$name"
  timeout "$limit" "$@" >>"$LOG" 2>&1 || rc=$?
  local status=pass
  if ((rc == 124)); then status="TIMEOUT (${limit}s)"; elif ((rc != 0)); then status="FAIL (exit $rc)"; fi
  [[ $status == pass ]] || FAILED=1
  RESULTS+=("| $name | $status | $((SECONDS - t0)) s |")
  echo "    $status in $((SECONDS - t0)) s (log: $LOG)"
}

stage "machine"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
export PATH=/usr/local/cuda/bin:$PATH
nvcc --version | tail -1 | tee -a "$LOG"

# Debian packages brought along as .deb files (no network on GPU machines).
CMAKE_EXTRA=()
if compgen -G "$ROOT/.deps/*.deb" >/dev/null; then
  stage "unpacking .deps/*.deb into .deps/root"
  for f in "$ROOT"/.deps/*.deb; do dpkg-deb -x "$f" "$ROOT/.deps/root"; done
  P=$ROOT/.deps/root/usr
  export LD_LIBRARY_PATH=$P/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  CMAKE_EXTRA+=(-DCMAKE_PREFIX_PATH="$P" -DCMAKE_LIBRARY_PATH="$P/lib/x86_64-linux-gnu"
                -DCMAKE_INCLUDE_PATH="$P/include")
fi

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
run "configure (sm_$ARCH)" 120 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DPORTA_BACKENDS=cuda -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DPORTA_BUILD_BENCH=OFF "${CMAKE_EXTRA[@]}"
run "build" 300 cmake --build "$BUILD" -j "$JOBS" --target porta_tests porta_cli

TESTS=$BUILD/bin/porta_tests
CONF='Ops/Conformance.*cuda_0*'
run "conformance + backend tests on cuda:0" 240 "$TESTS" --gtest_filter="$CONF:*GpuBackend*cuda*" \
  --gtest_output=xml:"$OUT_DIR/conformance.xml"
# Sanitizers: the small cases only (perf-size cases are skipped by the suite itself).
run "compute-sanitizer memcheck" 240 compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$TESTS" --gtest_filter="$CONF"
run "compute-sanitizer racecheck" 240 compute-sanitizer --tool racecheck --error-exitcode 3 \
  "$TESTS" --gtest_filter="$CONF"
for m in "$ROOT"/models/*/; do
  [[ -f $m/model.onnx ]] || continue
  run "model $(basename "$m") on cpu,cuda:0" 120 "$BUILD/bin/porta" run "$m/model.onnx" \
    --device cpu,cuda:0 --repeat 20
done
run "performance (PORTA_GPU_PERF=1)" 180 env PORTA_GPU_PERF=1 "$TESTS" --gtest_filter='*GpuPerf*cuda*'
grep '^PERF|' "$LOG" >"$OUT_DIR/perf.txt" || true

{
  echo "# porta GPU check — $(date -u +%Y-%m-%d) on $GPU (sm_$ARCH)"
  echo
  echo "| stage | result | time |"
  echo "|---|---|---|"
  printf '%s\n' "${RESULTS[@]}"
  echo
  echo "| measurement | value | unit | note |"
  echo "|---|---|---|---|"
  sed 's/^PERF|/| /; s/|/ | /g; s/$/ |/' "$OUT_DIR/perf.txt" || true
  echo
  echo "Conformance summary: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG" | sort | uniq -c | tr '\n' ';')"
} | tee "$OUT_DIR/gpu-check.md"
exit $FAILED
