#!/usr/bin/env bash
# porta on a Vulkan device against porta on the cpu, on the real-model zoo: the issue's "within
# 10x of the cpu" measure. For each model, `porta run --device cpu` and `porta run --device D`
# alternate as separate processes for R rounds; the table gives the median µs per inference of
# each (each process: the median of its --repeat timed runs, after porta's 2 untimed ones) and
# D/cpu (the slowdown), and the geometric mean. With --before, a third column runs D with
# PORTA_DISABLE_KERNELS set to the given list (e.g. the CPU-like devices' kernels, to show what
# they changed). A model that fails is reported with the last line of its error.
#
# Usage: bench/compare_vulkan.sh [--zoo DIR] [--device vulkan:0] [--threads 2] [--repeat N]
#                                [--rounds R] [--opset 17] [--before LIST] [--porta PATH] [NAME ...]
#   --zoo  the zoo (default build/zoo; ctest's zoo.export writes it); NAMEs are its folders,
#          `resnet18` = resnet18_op17 (default: every member with the --opset suffix)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # median_of, field_of, load_now, zoo_names, zoo_inputs, require_*
ZOO=$ROOT/build/zoo DEVICE=vulkan:0 THREADS=2 REPEAT=5 ROUNDS=2 OPSET=17 BEFORE=""
PORTA=$ROOT/build/bin/porta
NAMES=()
while (($#)); do
  case $1 in
    --zoo) ZOO=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --opset) OPSET=$2; shift 2 ;;
    --before) BEFORE=$2; shift 2 ;;
    --porta) PORTA=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
require_positive vulkan "--repeat, --rounds and --threads" "$REPEAT" "$ROUNDS" "$THREADS"
require_zoo vulkan "$ZOO"
[[ -x $PORTA ]] || { echo "[vulkan] $PORTA is not there (ninja -C build porta_cli)" >&2; exit 2; }
mapfile -t NAMES < <(zoo_names "$ZOO" "$OPSET" "${NAMES[@]}")

declare -A US ERR
run() {  # run NAME KEY DEVICE [DISABLE]
  local dir=$ZOO/$1 key=$1:$2 out rc=0 us inputs
  local args=(run "$dir/model.onnx" --repeat "$REPEAT" --device "$3")
  mapfile -t inputs < <(zoo_inputs "$dir")
  args+=("${inputs[@]}")
  out=$(OMP_NUM_THREADS=$THREADS PORTA_DISABLE_KERNELS=${4:-} "$PORTA" "${args[@]}" 2>&1) || rc=$?
  us=$(field_of median_us "$out")
  if ((rc == 0)) && [[ -n $us ]]; then US[$key]+=" $us"; else ERR[$key]=$(sed '/^[[:space:]]*$/d' <<<"$out" | tail -1); fi
}

echo "# porta $DEVICE vs porta cpu, $(date -u +%Y-%m-%d), load $(load_now)"
echo "# $0 --device $DEVICE --threads $THREADS --repeat $REPEAT --rounds $ROUNDS${BEFORE:+ --before $BEFORE}"
for ((r = 0; r < ROUNDS; ++r)); do
  for name in "${NAMES[@]}"; do
    run "$name" cpu cpu
    run "$name" dev "$DEVICE"
    if [[ -n $BEFORE ]]; then run "$name" before "$DEVICE" "$BEFORE"; fi
  done
done
printf '| %-28s | %10s | %12s | %8s |%s\n' model "cpu µs" "$DEVICE µs" "dev/cpu" "${BEFORE:+ before µs | before/cpu |}"
printf '|%s|%s|%s|%s|%s\n' "$(printf -- '-%.0s' {1..30})" "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..14})" \
  "$(printf -- '-%.0s' {1..10})" "${BEFORE:+---|---|}"
logsum=0 n=0
for name in "${NAMES[@]}"; do
  a=$(median_of "${US[$name:cpu]:-}") b=$(median_of "${US[$name:dev]:-}")
  if [[ $a == - || $b == - ]]; then
    printf '| %-28s | %s |\n' "$name" "failed: ${ERR[$name:cpu]:-}${ERR[$name:dev]:-}"
    continue
  fi
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", b / a }')
  logsum=$(awk -v s="$logsum" -v a="$a" -v b="$b" 'BEGIN { print s + log(b / a) }')
  n=$((n + 1))
  extra=""
  if [[ -n $BEFORE ]]; then
    c=$(median_of "${US[$name:before]:-}")
    if [[ $c == - ]]; then extra=" failed: ${ERR[$name:before]:-} |"
    else extra=" $c | $(awk -v a="$a" -v c="$c" 'BEGIN { printf "%.1f", c / a }') |"; fi
  fi
  printf '| %-28s | %10s | %12s | %8s |%s\n' "$name" "$a" "$b" "$ratio" "$extra"
done
if ((n)); then
  echo "geometric mean $DEVICE/cpu over $n models: $(awk -v s="$logsum" -v n="$n" 'BEGIN { printf "%.1f", exp(s / n) }')"
fi
echo "# load after: $(load_now)"
