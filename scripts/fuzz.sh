#!/usr/bin/env bash
# Builds porta's libFuzzer targets (fuzz/, clang + ASan + UBSan, cpu backend) in build-fuzz/
# and runs each for a bounded time, then prints target, duration, executions, result.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  default 60; TARGET one of: onnx tensor_proto npy json (default: all)
# Environment:
#   PORTA_FUZZ_PARALLEL  targets run at once (default 1)      PORTA_FUZZ_NICE  nice level (10)
#   PORTA_JOBS           build jobs (default: nproc)          PORTA_FUZZ_ARGS  extra libFuzzer flags
# Work files: build-fuzz/fuzz-runs/{corpus,seeds,artifacts,logs}/<target>. The corpus grows
# across runs; crashing inputs land in artifacts/<target>/ (copy them into
# fuzz/corpus/<target>/ once fixed, so ctest's fuzz_replay.<target> keeps them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
WORK="$BUILD/fuzz-runs"
ALL_TARGETS=(onnx tensor_proto npy json)

SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL_TARGETS[@]}")
for t in "${TARGETS[@]}"; do
  [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || { echo "[fuzz] unknown target '$t' (have: ${ALL_TARGETS[*]})" >&2; exit 2; }
done

# ---- toolchain: Debian's clang 14 with libFuzzer (compiler-rt) and its OpenMP ------------------
PKGS=(clang-14 libclang-rt-14-dev libomp-14-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[fuzz] installing: ${missing[*]}"
  SUDO=""
  [[ $(id -u) != 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- build -----------------------------------------------------------------------------------
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
fi
NICE=(nice -n "${PORTA_FUZZ_NICE:-10}")
"${NICE[@]}" cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 "${LAUNCHER[@]}" \
  -DPORTA_FUZZ=ON -DPORTA_BACKENDS=cpu -DPORTA_BUILD_TESTS=OFF -DPORTA_BUILD_BENCH=OFF \
  -DPORTA_BUILD_TORCH=OFF >/dev/null
"${NICE[@]}" cmake --build "$BUILD" -j "${PORTA_JOBS:-$(nproc)}" --target "${TARGETS[@]/#/porta_fuzz_}"

# ---- seeds: the committed corpus plus the project's models and test fixtures ------------------
node_cases=""
for d in "$ROOT/build/onnx_node_cases/node" "$BUILD/onnx_node_cases/node"; do
  [[ -d "$d" ]] && { node_cases="$d"; break; }
done
if [[ -z "$node_cases" ]] && bash "$ROOT/scripts/gen_onnx_node_cases.sh" --check; then
  bash "$ROOT/scripts/gen_onnx_node_cases.sh" "$BUILD/onnx_node_cases" >/dev/null
  node_cases="$BUILD/onnx_node_cases/node"
fi

seed() {  # seed TARGET FILE...: copies files into the run's seed folder under unique names
  local dir="$WORK/seeds/$1" f
  shift
  for f in "$@"; do
    [[ -f "$f" ]] && cp "$f" "$dir/$(echo "${f#"$ROOT"/}" | tr '/' '_')"
  done
  return 0
}
for t in "${TARGETS[@]}"; do
  rm -rf "$WORK/seeds/$t"
  mkdir -p "$WORK/seeds/$t" "$WORK/corpus/$t" "$WORK/artifacts/$t" "$WORK/logs"
  shopt -s nullglob
  case "$t" in
    onnx) seed onnx "$ROOT"/models/*/*.onnx ${node_cases:+"$node_cases"/*/model.onnx} ;;
    tensor_proto) seed tensor_proto ${node_cases:+"$node_cases"/*/test_data_set_0/*.pb} ;;
    npy) seed npy "$ROOT"/models/*/*.npy ;;
    json) seed json "$ROOT"/bench/*.json "$ROOT"/bench/*/*.json "$ROOT"/docs/*.json ;;
  esac
  shopt -u nullglob
done

# ---- runs ------------------------------------------------------------------------------------
# Limits: -rss_limit_mb catches leaks that grow, -malloc_limit_mb any single allocation past
# 512 MiB (porta's own cpu allocations are capped lower by PORTA_MEMORY_LIMIT in the targets),
# -timeout an input that takes over 30 s (a hang).
run_target() {
  local t="$1" log="$WORK/logs/$1.log"
  # shellcheck disable=SC2086
  "${NICE[@]}" "$BUILD/bin/porta_fuzz_$t" "$WORK/corpus/$t" "$ROOT/fuzz/corpus/$t" "$WORK/seeds/$t" \
    -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=30 \
    -print_final_stats=1 -artifact_prefix="$WORK/artifacts/$t/" ${PORTA_FUZZ_ARGS:-} >"$log" 2>&1
}
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"

declare -A rc start finish
running=0
for t in "${TARGETS[@]}"; do
  while ((running >= ${PORTA_FUZZ_PARALLEL:-1})); do wait -n || true; running=$((running - 1)); done
  echo "[fuzz] $t: ${SECONDS_PER_TARGET}s, log $WORK/logs/$t.log"
  ( s=$(date +%s); set +e; run_target "$t"; echo "$? $s $(date +%s)" >"$WORK/logs/$t.status" ) &
  running=$((running + 1))
done
wait || true

# ---- report: one line per target, from libFuzzer's final stats -------------------------------
printf '\n%-13s %9s %12s %8s  %s\n' target seconds executions exec/s result
failed=0
for t in "${TARGETS[@]}"; do
  log="$WORK/logs/$t.log"
  read -r code s e <"$WORK/logs/$t.status"
  secs=$((e - s))
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  execs=${execs:-0}
  if [[ "$code" == 0 ]]; then
    result="no crash, leak, hang or OOM"
  else
    failed=1
    result=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+|runtime error: .*|ALARM: .*' "$log" || echo "exit $code")
    result="FAILED ($result); inputs in $WORK/artifacts/$t/"
  fi
  printf '%-13s %9s %12s %8s  %s\n' "$t" "$secs" "$execs" "$((secs ? execs / secs : 0))" "$result"
done
exit "$failed"
