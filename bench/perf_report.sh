#!/usr/bin/env bash
# Every figure of docs/PERFORMANCE.md in one run: the model comparison (porta vs ONNX Runtime
# vs PyTorch), then the micro-benchmarks (dispatch, eager call, allocation, copies, session
# start-up, elementwise GB/s, MatMul 1024^3 against oneDNN called directly), with the load
# average before and after each part.
#
# Usage: bench/perf_report.sh [BUILD_DIR]   (default: build; needs porta_cli, porta_bench_micro
#        and porta_platform_drift built in Release, and the peers of bench/compare_models.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$ROOT/build}
load() { echo "[load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%H:%M:%S UTC')]"; }

echo "== the machine's own drift: memory and FMA throughput, 30 s (bench/platform_drift.cpp) =="
"$BUILD/bin/porta_platform_drift" 30 | tail -3
echo "== models (2 threads) =="
"$ROOT/bench/compare_models.sh" --porta "$BUILD/bin/porta" --repeat 100 --rounds 3
echo "== models (1 thread each: OMP_NUM_THREADS=1 for porta and torch, --threads 1) =="
OMP_NUM_THREADS=1 "$ROOT/bench/compare_models.sh" --porta "$BUILD/bin/porta" --repeat 100 --rounds 3 --threads 1
echo "== dispatch, eager call, runtime =="
load
"$BUILD/bin/porta_bench_micro" --benchmark_filter='eager_add_1|resolve|session_run|tensor_empty|copy_|memcpy|session_startup|add_4096' \
  --benchmark_min_time=0.5 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
load
echo "== MatMul 1024^3 f32: porta vs oneDNN direct (adaptive thread policy, then fixed) =="
"$BUILD/bin/porta_bench_micro" --benchmark_filter='matmul' --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
PORTA_THREAD_POLICY=fixed "$BUILD/bin/porta_bench_micro" --benchmark_filter='matmul' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true
load
