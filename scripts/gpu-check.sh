#!/usr/bin/env bash
# porta — the whole GPU check on an NVIDIA machine, in one go, within a time budget
# (PORTA_GPU_CHECK_BUDGET seconds, default 450: under 8 minutes on an H200 with 16 cores):
#   1. configure and build for the GPU present (its compute capability only, e.g. sm_90), with
#      cuDNN when the machine has it (the toolkit's, or a pip nvidia-cudnn package's);
#   2. the conformance suite (every op's cases vs the float64 reference) and the GPU backend
#      and device-check tests on cuda:0; Conv once more with cuDNN off (PORTA_CUDNN=0), so
#      porta's own implicit-GEMM kernel is checked too;
#   3. the example models on cuda:0 against PyTorch's saved outputs, what runs where
#      (`porta ops`: every node should say native), and their time (`porta run`, in f32 and
#      with `--precision bf16`; the bf16/f16 sessions' test, Precision.Gpu*, in stage 2); the plugin
#      example examples/fused_leaky_relu (its .cu built by porta_add_plugin) on cuda:0;
#   4. compute-sanitizer memcheck over the cuda:0 conformance cases of every kernel family and
#      every kernel added with the custom-op set, racecheck over the kernels that share memory between threads;
#   5. the GPU performance checks (tests/gpu_perf_test.cpp) and `porta bench` on cuda:0;
#   5b. when the machine has NVIDIA's Vulkan driver (an nvidia_icd*.json) and glslc (the
#      machine's or .deps'), the Vulkan backend is built too: its conformance cases and Vulkan
#      suites on vulkan:0 (the GPU: discrete devices come first) and `porta bench` there, so
#      the GPU-style kernels ("tiled" GEMM, implicit-GEMM Conv) are measured on a GPU;
#   6. a results table, printed and written to $OUT/gpu-check.md (or build-gpu/gpu-check.md).
# Every stage runs even when an earlier one fails (stages that cannot run without the build
# are marked so); a stage that would overrun the budget is cut to what is left or skipped.
# The exit status says whether all passed. Logs: $OUT/gpu-check.log.
# Dependencies missing from the machine's image come as .deb files (scripts/gpu-deps.sh).
# On this project's workplace: run scripts/gpu-deps.sh here (about 11 MiB into .deps/), then on
# the device machine `bash scripts/gpu-check.sh` with .deps carried along and a command limit
# of about 540 s; $OUT/gpu-check.md, gpu-check.log, conformance.xml, perf.txt and
# bench-cuda.json come back.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${PORTA_GPU_BUILD:-$ROOT/build-gpu}
OUT_DIR=${OUT:-$BUILD}
JOBS=${JOBS:-$(nproc)}
BUDGET=${PORTA_GPU_CHECK_BUDGET:-450}
mkdir -p "$BUILD" "$OUT_DIR"
LOG=$OUT_DIR/gpu-check.log
: >"$LOG"
RESULTS=()
FAILED=0
stage() { echo; echo "=== [$(date +%T) +${SECONDS}s] $*" | tee -a "$LOG"; }
# run NAME LIMIT_S CMD...: runs a stage with a time limit (cut to the budget left), records
# pass / fail / timeout / skipped and its duration.
run() {
  local name=$1 limit=$2; shift 2
  local left=$((BUDGET - SECONDS - 10))
  if ((left < 15)); then
    RESULTS+=("| $name | SKIPPED (time budget spent) | 0 s |")
    FAILED=1
    echo "    $name: skipped, ${BUDGET}s budget spent" | tee -a "$LOG"
    return
  fi
  ((limit > left)) && limit=$left
  local t0=$SECONDS rc=0
  stage "$name (limit ${limit}s)"
  timeout -k 5 "$limit" "$@" >>"$LOG" 2>&1 || rc=$?
  local status=pass
  if ((rc == 124 || rc == 137)); then status="TIMEOUT (${limit}s)"; elif ((rc != 0)); then status="FAIL (exit $rc)"; fi
  [[ $status == pass ]] || FAILED=1
  RESULTS+=("| $name | $status | $((SECONDS - t0)) s |")
  echo "    $status in $((SECONDS - t0)) s (log: $LOG)"
}
# needs FILE NAME: records NAME as not run when FILE (a build output) is missing.
needs() {
  [[ -x $1 ]] && return 0
  RESULTS+=("| $2 | NOT RUN (no $(basename "$1"): build failed) | 0 s |")
  FAILED=1
  return 1
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
# cuDNN: the toolkit's when it has one (CMake looks there itself), else a pip package's.
if [[ ! -f /usr/local/cuda/include/cudnn.h ]]; then
  CUDNN_ROOT=$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__) if nvidia.cudnn.__file__ else list(nvidia.cudnn.__path__)[0])' 2>/dev/null || true)
  if [[ -n $CUDNN_ROOT && -f $CUDNN_ROOT/include/cudnn.h ]]; then
    echo "cuDNN from $CUDNN_ROOT" | tee -a "$LOG"
    CMAKE_EXTRA+=(-DPORTA_CUDNN_ROOT="$CUDNN_ROOT")
    export LD_LIBRARY_PATH=$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
fi
# The ONNX node cases (generated at build time by a python3 with onnx) are not needed here and
# the image's onnx is not the version they are written for: PORTA_ONNX_NODE_CASES=OFF.

# Vulkan on the NVIDIA driver, when both the driver's ICD and glslc are there.
BACKENDS=cuda
VK_ICD=$(ls /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null | head -1)
[[ -x $ROOT/.deps/root/usr/bin/glslc ]] && export PATH=$ROOT/.deps/root/usr/bin:$PATH
if [[ -n $VK_ICD ]] && command -v glslc >/dev/null; then
  BACKENDS="cuda;vulkan"
  echo "Vulkan: NVIDIA driver ($VK_ICD), glslc $(command -v glslc)" | tee -a "$LOG"
else
  echo "Vulkan: not built (NVIDIA ICD: ${VK_ICD:-none}; glslc: $(command -v glslc || echo none))" | tee -a "$LOG"
fi

GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
run "configure (sm_$ARCH)" 90 cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DPORTA_BACKENDS="$BACKENDS" \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DPORTA_BUILD_BENCH=OFF -DPORTA_BUILD_TORCH=OFF \
  -DPORTA_ONNX_NODE_CASES=OFF "${CMAKE_EXTRA[@]}"
grep -E 'porta (cuda|backend)' "$LOG" | tail -3
run "build" 300 cmake --build "$BUILD" -j "$JOBS" --target porta_tests porta_cli

TESTS=$BUILD/bin/porta_tests
PORTA=$BUILD/bin/porta
CONF='Ops/Conformance.*cuda_0'
if needs "$TESTS" "conformance + backend tests on cuda:0"; then
  run "conformance + backend tests on cuda:0" 120 "$TESTS" --gtest_brief=1 \
    --gtest_filter="$CONF:*GpuBackend*cuda*:*GpuKernel*cuda*:Precision.Gpu*" --gtest_output=xml:"$OUT_DIR/conformance.xml"
  run "Conv on cuda:0 without cuDNN (implicit GEMM)" 60 env PORTA_CUDNN=0 "$TESTS" --gtest_brief=1 \
    --gtest_filter='Ops/Conformance.*/Conv_*cuda_0'
  run "models vs PyTorch on cuda:0" 90 "$TESTS" --gtest_filter='ModelTest.*cuda0*'
fi
if needs "$PORTA" "models: placement and time on cuda:0"; then
  export PORTA ROOT
  # Per model: the nodes that do not run natively on cuda:0 (there should be none), then the
  # median time of 50 runs as a MODEL| line for the table.
  run "models: placement and time on cuda:0" 60 bash -c '
    rc=0
    for m in "$ROOT"/models/*/; do
      [[ -f $m/model.onnx ]] || continue
      name=$(basename "$m")
      echo "--- $name"
      "$PORTA" ops "$m/model.onnx" --device cuda:0 | grep -iE "fallback|composite" || true
      t=$("$PORTA" run "$m/model.onnx" --device cuda:0 --repeat 50) || rc=1
      echo "$t" | grep -E "median_us" | sed "s/^/MODEL|$name|/"
      t=$("$PORTA" run "$m/model.onnx" --device cuda:0 --precision bf16 --repeat 50) || rc=1
      echo "$t" | grep -E "median_us" | sed "s/^/MODEL|$name bf16|/"
    done
    exit $rc'
fi
if needs "$PORTA" "plugin example on cuda:0"; then
  # examples/fused_leaky_relu: its .cu kernel built by porta_add_plugin with this build's nvcc,
  # loaded as a plugin, every case on cuda:0 against the plugin's float64 reference; the
  # kernel must be the plugin's own ("native").
  export PORTA ROOT BUILD
  run "plugin example (.cu via porta_add_plugin) on cuda:0" 90 bash -c '
    set -e
    cmake -S "$ROOT/examples/fused_leaky_relu" -B "$BUILD/fused_leaky_relu" -Dporta_DIR="$BUILD/cmake" >/dev/null
    cmake --build "$BUILD/fused_leaky_relu" >/dev/null
    "$PORTA" test --plugin "$BUILD/fused_leaky_relu/libfused_leaky_relu.so" --device cuda:0 | tee /dev/stderr |
      grep -Eq "feature_map +f32 +cuda:0 +native .* ok"
    "$PORTA" test --plugin "$BUILD/fused_leaky_relu/libfused_leaky_relu.so" --device cuda:0 | grep -q " 0 failed"'
fi
if needs "$TESTS" "compute-sanitizer memcheck"; then
  # ops_filter A|B|...: the conformance cases of those ops on cuda:0.
  ops_filter() { echo "$1" | tr '|' '\n' | sed 's|.*|Ops/Conformance.*/&_*cuda_0|' | paste -sd:; }
  # memcheck: every kernel family once and every kernel added with the custom-op set (the whole suite
  # under memcheck would not fit the budget; the perf-size cases are skipped by the suite).
  CHECKED='MaxPool|AveragePool|GlobalMaxPool|ArgMax|ArgMin|Pad|Range|ConstantOfShape|Shape|Pow|InstanceNormalization|ConvTranspose|Conv|LSTM|GRU|Gather|Add|Where|Cast|Transpose|Slice|Concat|Tile|ReduceSum|ReduceMax|Softmax|LayerNormalization|BatchNormalization|MatMul|Gemm|ScaledDotProductAttention|RotaryEmbedding|NormalizeImage'
  run "compute-sanitizer memcheck" 150 compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$TESTS" --gtest_brief=1 --gtest_filter="$(ops_filter "$CHECKED"):*GpuKernelChecks*cuda*"
  # racecheck: the kernels whose threads share memory (block reductions, tiles).
  SHARED='Softmax|LogSoftmax|LayerNormalization|RmsNorm|InstanceNormalization|ReduceSum|ReduceMax|GlobalAveragePool|ArgMax|ArgMin|MatMul|Gemm|ScaledDotProductAttention|LSTM|GRU'
  run "compute-sanitizer racecheck" 90 compute-sanitizer --tool racecheck --error-exitcode 3 \
    "$TESTS" --gtest_brief=1 --gtest_filter="$(ops_filter "$SHARED")"
fi
if needs "$TESTS" "performance checks (PORTA_GPU_PERF=1)"; then
  run "performance checks (PORTA_GPU_PERF=1)" 90 env PORTA_GPU_PERF=1 "$TESTS" --gtest_filter='*GpuPerf*cuda*'
fi
if needs "$PORTA" "porta bench on cuda:0"; then
  run "porta bench on cuda:0" 90 "$PORTA" bench --device cuda:0 --min-time 0.05 --max-case-time 1 \
    --no-progress --json "$OUT_DIR/bench-cuda.json"
fi
if [[ $BACKENDS == *vulkan* ]] && needs "$TESTS" "Vulkan suites on vulkan:0 (NVIDIA driver)"; then
  run "Vulkan suites on vulkan:0 (NVIDIA driver)" 90 "$TESTS" --gtest_brief=1 \
    --gtest_filter='Ops/Conformance.*vulkan_0:Vulkan*:-*LargeOperand*'
  run "porta bench on vulkan:0 (NVIDIA driver)" 45 "$PORTA" bench --device vulkan:0 \
    --op MatMul,Gemm,Conv,Add,Relu,Softmax --min-time 0.05 --max-case-time 1 --no-progress \
    --json "$OUT_DIR/bench-vulkan.json"
fi
grep '^PERF|' "$LOG" >"$OUT_DIR/perf.txt" || true

{
  echo "# porta GPU check — $(date -u +%Y-%m-%d) on $GPU (sm_$ARCH), ${SECONDS} s"
  echo
  echo "$(grep -m1 -o 'cuDNN [^ ].*' "$LOG" || echo 'cuDNN: (configure did not report)')"
  echo
  echo "| stage | result | time |"
  echo "|---|---|---|"
  printf '%s\n' "${RESULTS[@]}"
  echo
  echo "| measurement | value | unit | note |"
  echo "|---|---|---|---|"
  sed 's/^PERF|/| /; s/|/ | /g; s/$/ |/' "$OUT_DIR/perf.txt" || true
  echo
  echo "| model on cuda:0 | time |"
  echo "|---|---|"
  grep '^MODEL|' "$LOG" | sed 's/^MODEL|/| /; s/|median_us=/| /; s/$/ us |/' || true
  echo
  echo "Test summary lines: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG" | sort | uniq -c | tr '\n' ';')"
  echo
  echo "Failed tests: $(grep -E '^\[  FAILED  \] [A-Za-z]' "$LOG" | sort -u | head -40 | tr '\n' ' ')"
  echo "Sanitizer errors: $(grep -cE '^========= (Invalid|Race|Error|.*hazard)' "$LOG" || true)"
} | tee "$OUT_DIR/gpu-check.md"
exit $FAILED
