#!/usr/bin/env bash
# porta in f32 against porta in a low compute precision (docs/ARCHITECTURE.md, "Compute
# precision") on the real-model zoo, on the cpu. For each model and thread count, `porta run
# --precision f32` and `porta run --precision P` alternate as separate processes for R rounds;
# the table gives the median µs per inference of each (each process: the median of its
# --repeat timed runs, after porta's 2 untimed ones), f32/P (> 1: the low precision is faster)
# and the geometric mean of that ratio. A model that fails on one side is reported with the
# last line of its error and left out of the mean.
#
# Usage: bench/compare_precision.sh [--zoo DIR] [--precision bf16] [--threads "1 2"]
#                                   [--repeat N] [--rounds R] [--opset 17] [--porta PATH] [NAME ...]
#   --zoo  the zoo (default build/zoo; ctest's zoo.export writes it); NAMEs are its folders,
#          `resnet18` = resnet18_op17 (default: every member with the --opset suffix)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # median_of, field_of, load_now, zoo_names, zoo_inputs, require_*
ZOO=$ROOT/build/zoo PRECISION=bf16 THREADS_LIST="1 2" REPEAT=20 ROUNDS=3 OPSET=17
PORTA=$ROOT/build/bin/porta
NAMES=()
while (($#)); do
  case $1 in
    --zoo) ZOO=$2; shift 2 ;;
    --precision) PRECISION=$2; shift 2 ;;
    --threads) THREADS_LIST=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --opset) OPSET=$2; shift 2 ;;
    --porta) PORTA=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
# shellcheck disable=SC2086  # the thread counts split into words
require_positive precision "--repeat, --rounds and --threads" "$REPEAT" "$ROUNDS" $THREADS_LIST
require_zoo precision "$ZOO"
[[ -x $PORTA ]] || { echo "[precision] $PORTA is not there (ninja -C build porta_cli)" >&2; exit 2; }
mapfile -t NAMES < <(zoo_names "$ZOO" "$OPSET" "${NAMES[@]}")

declare -A US ERR
run() {  # run THREADS NAME PRECISION
  local dir=$ZOO/$2 key=$1:$2:$3 out rc=0 us inputs
  local args=(run "$dir/model.onnx" --repeat "$REPEAT" --precision "$3")
  mapfile -t inputs < <(zoo_inputs "$dir")
  args+=("${inputs[@]}")
  out=$(OMP_NUM_THREADS=$1 "$PORTA" "${args[@]}" 2>&1) || rc=$?
  us=$(field_of median_us "$out")
  if ((rc == 0)) && [[ -n $us ]]; then US[$key]+=" $us"; else ERR[$key]=$(sed '/^[[:space:]]*$/d' <<<"$out" | tail -1); fi
}

echo "# porta f32 vs porta $PRECISION, cpu, $(date -u +%Y-%m-%d), load $(load_now)"
echo "# $0 --precision $PRECISION --threads \"$THREADS_LIST\" --repeat $REPEAT --rounds $ROUNDS"
for t in $THREADS_LIST; do
  for ((r = 0; r < ROUNDS; ++r)); do
    for name in "${NAMES[@]}"; do
      run "$t" "$name" f32
      run "$t" "$name" "$PRECISION"
    done
  done
  echo
  echo "threads=$t"
  printf '| %-28s | %12s | %12s | %8s |\n' model "f32 µs" "$PRECISION µs" "f32/$PRECISION"
  printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..30})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..10})"
  logsum=0 n=0
  for name in "${NAMES[@]}"; do
    a=$(median_of "${US[$t:$name:f32]:-}") b=$(median_of "${US[$t:$name:$PRECISION]:-}")
    if [[ $a == - || $b == - ]]; then
      printf '| %-28s | %s |\n' "$name" "failed: ${ERR[$t:$name:f32]:-}${ERR[$t:$name:$PRECISION]:-}"
      continue
    fi
    ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a / b }')
    logsum=$(awk -v s="$logsum" -v a="$a" -v b="$b" 'BEGIN { print s + log(a / b) }')
    n=$((n + 1))
    printf '| %-28s | %12s | %12s | %8s |\n' "$name" "$a" "$b" "$ratio"
  done
  if ((n)); then
    echo "geometric mean f32/$PRECISION over $n models: $(awk -v s="$logsum" -v n="$n" 'BEGIN { printf "%.2f", exp(s / n) }')"
  fi
done
echo "# load after: $(load_now)"
