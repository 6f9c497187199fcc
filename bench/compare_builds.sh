#!/usr/bin/env bash
# Two builds of porta against each other on the real-model zoo, on one device: for each model,
# `porta run` of build A and of build B alternate as separate processes for R rounds (on a VM
# whose speed drifts between windows minutes apart, only such alternation compares). Each
# process reports its fastest and its median run of --repeat timed runs (after porta's 2
# untimed ones); the table gives, per build, the median over its processes of each, B/A for
# both, and the geometric mean of B/A. A build is a build tree (its bin/porta and lib/, e.g. a
# copy of build-cpu made before a change: cp -r build-cpu/bin build-cpu/lib /tmp/before/).
#
# Usage: bench/compare_builds.sh --a DIR --b DIR [--zoo DIR] [--device cpu|vulkan:0]
#                                [--threads 2] [--repeat N] [--rounds R] [--opset 17] [NAME ...]
#   --zoo  the zoo (default build/zoo; ctest's zoo.export writes it); NAMEs are its folders,
#          `resnet18` = resnet18_op17 (default: every member with the --opset suffix)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # median_of, field_of, load_now, zoo_names, zoo_inputs, require_*
ZOO=$ROOT/build/zoo DEVICE=cpu THREADS=2 REPEAT=10 ROUNDS=5 OPSET=17 A="" B=""
NAMES=()
while (($#)); do
  case $1 in
    --a) A=$2; shift 2 ;;
    --b) B=$2; shift 2 ;;
    --zoo) ZOO=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --opset) OPSET=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
require_positive builds "--repeat, --rounds and --threads" "$REPEAT" "$ROUNDS" "$THREADS"
for d in "$A" "$B"; do
  [[ -n $d && -x $d/bin/porta ]] || { echo "[builds] --a and --b take build trees with bin/porta, got '$d'" >&2; exit 2; }
done
require_zoo builds "$ZOO"
mapfile -t NAMES < <(zoo_names "$ZOO" "$OPSET" "${NAMES[@]}")

declare -A MIN MED ERR
run() {  # run NAME BUILD KEY
  local dir=$ZOO/$1 key=$1:$3 out rc=0 inputs
  local args=(run "$dir/model.onnx" --repeat "$REPEAT" --device "$DEVICE")
  mapfile -t inputs < <(zoo_inputs "$dir")
  args+=("${inputs[@]}")
  # The build's own libporta, wherever the tree was copied to.
  out=$(LD_LIBRARY_PATH=$2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} OMP_NUM_THREADS=$THREADS "$2/bin/porta" "${args[@]}" 2>&1) || rc=$?
  local lo med
  lo=$(field_of min_us "$out") med=$(field_of median_us "$out")
  if ((rc == 0)) && [[ -n $lo && -n $med ]]; then MIN[$key]+=" $lo" MED[$key]+=" $med"
  else ERR[$key]=$(sed '/^[[:space:]]*$/d' <<<"$out" | tail -1); fi
}

echo "# porta $B (B) vs $A (A) on $DEVICE, $(date -u +%Y-%m-%d), load $(load_now)"
echo "# $0 --device $DEVICE --threads $THREADS --repeat $REPEAT --rounds $ROUNDS"
for ((r = 0; r < ROUNDS; ++r)); do
  for name in "${NAMES[@]}"; do
    run "$name" "$A" a
    run "$name" "$B" b
  done
done
printf '| %-28s | %11s | %11s | %8s | %11s | %11s | %8s |\n' model "A fastest" "B fastest" "B/A" "A median" "B median" "B/A"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..30})" "$(printf -- '-%.0s' {1..13})" \
  "$(printf -- '-%.0s' {1..13})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..13})" \
  "$(printf -- '-%.0s' {1..13})" "$(printf -- '-%.0s' {1..10})"
logsum=0 n=0
for name in "${NAMES[@]}"; do
  a=$(median_of "${MIN[$name:a]:-}") b=$(median_of "${MIN[$name:b]:-}")
  am=$(median_of "${MED[$name:a]:-}") bm=$(median_of "${MED[$name:b]:-}")
  if [[ $a == - || $b == - ]]; then
    printf '| %-28s | failed: %s |\n' "$name" "${ERR[$name:a]:-}${ERR[$name:b]:-}"
    continue
  fi
  r1=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
  r2=$(awk -v a="$am" -v b="$bm" 'BEGIN { printf "%.3f", b / a }')
  logsum=$(awk -v s="$logsum" -v a="$a" -v b="$b" 'BEGIN { print s + log(b / a) }')
  n=$((n + 1))
  printf '| %-28s | %11.1f | %11.1f | %8s | %11.1f | %11.1f | %8s |\n' "$name" "$a" "$b" "$r1" "$am" "$bm" "$r2"
done
if ((n > 0)); then
  awk -v s="$logsum" -v n="$n" 'BEGIN { printf "geometric mean of B/A (fastest runs) over %d models: %.3f\n", n, exp(s / n) }'
fi
echo "# load after: $(load_now)"
