#!/usr/bin/env bash
# porta vs ONNX Runtime (CPU) vs PyTorch eager on the example models (models/<name>/), side by
# side. Prints a table (median µs per inference, ratios porta/ORT and porta/torch, where < 1
# means porta is faster) and the geometric mean of each ratio over the models all three ran.
# The three are measured model by model, back to back, so a change in the machine's load
# between measurements touches all of them; with --rounds R the whole pass runs R times and
# each cell is the median of the R medians. The load average is printed before and after.
#
# Usage: bench/compare_models.sh [--repeat N] [--warmup W] [--threads T] [--rounds R]
#                                [--porta PATH] [NAME ...]
#   --porta  the porta CLI (default: build/bin/porta); it must print `median_us=<number>` for
#            `porta run models/<name>/model.onnx --repeat N`
# Peers: node + bench/peers/node_modules/onnxruntime-node (see bench/peers/ort_bench.js),
#        python3 with torch (Debian python3-torch). A missing peer shows as "-" in its column.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # median_of, have_ort
REPEAT=50 WARMUP=10 THREADS=2 ROUNDS=1
PORTA=$ROOT/build/bin/porta
NAMES=()
while (($#)); do
  case $1 in
    --repeat) REPEAT=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --porta) PORTA=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
if ((${#NAMES[@]} == 0)); then
  for d in "$ROOT"/models/*/; do
    [[ -f $d/model.onnx ]] && NAMES+=("$(basename "$d")")
  done
fi

# A python3 that has torch (a pyenv python3 may shadow Debian's).
PY=""
for p in ${PORTA_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import torch" >/dev/null 2>&1; then PY=$p; break; fi
done

# Peer results: "model=<name> median_us=<x> ..." lines; each round's value is appended to a
# space-separated list per model.
declare -A ORT TORCH PORTA_US
parse() {  # parse ARRAY_NAME < lines
  local -n into=$1
  local line name us
  while read -r line; do
    name=$(sed -n 's/.*model=\([^ ]*\).*/\1/p' <<<"$line")
    us=$(sed -n 's/.*median_us=\([0-9.eE+-]*\).*/\1/p' <<<"$line")
    if [[ -n $name && -n $us ]]; then into[$name]="${into[$name]:-} $us"; fi
  done
  return 0
}

HAVE_ORT=0 HAVE_PORTA=0
if have_ort; then HAVE_ORT=1; fi
[[ -n $PY ]] || echo "[compare] PyTorch skipped: no python3 with torch (apt-get install python3-torch)" >&2
if [[ -x $PORTA ]]; then HAVE_PORTA=1
else echo "[compare] porta skipped: $PORTA not built (ninja -C build porta_cli)" >&2; fi

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(getconf _NPROCESSORS_ONLN) cores), $(date -u '+%Y-%m-%d %H:%M UTC')"
for ((round = 1; round <= ROUNDS; ++round)); do
  for name in "${NAMES[@]}"; do
    if ((HAVE_ORT)); then
      parse ORT < <(node "$ROOT/bench/peers/ort_bench.js" --repeat "$REPEAT" --warmup "$WARMUP" \
                     --threads "$THREADS" "$name" || true)
    fi
    if [[ -n $PY ]]; then
      parse TORCH < <("$PY" "$ROOT/bench/peers/torch_bench.py" --repeat "$REPEAT" --warmup "$WARMUP" \
                       --threads "$THREADS" "$name" || true)
    fi
    if ((HAVE_PORTA)); then
      out=$("$PORTA" run "$ROOT/models/$name/model.onnx" --repeat "$REPEAT" 2>&1 || true)
      us=$(sed -n 's/.*median_us=\([0-9.eE+-]*\).*/\1/p' <<<"$out" | tail -1)
      if [[ -n $us ]]; then PORTA_US[$name]="${PORTA_US[$name]:-} $us"
      else echo "[compare] porta failed on $name: $(tail -1 <<<"$out")" >&2; fi
    fi
  done
done
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"

# Table and geometric means (over the models where both sides of a ratio have a time).
{
  for name in "${NAMES[@]}"; do
    echo "$name $(median_of "${PORTA_US[$name]:-}") $(median_of "${ORT[$name]:-}") $(median_of "${TORCH[$name]:-}")"
  done
} | awk -v threads="$THREADS" -v repeat="$REPEAT" -v rounds="$ROUNDS" '
  function ratio(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b) }
  BEGIN {
    printf "median µs per inference, %s threads, %s runs after warm-up, median of %s round(s)\n", threads, repeat, rounds
    printf "%-12s %12s %12s %12s %10s %12s\n", "model", "porta", "ORT", "torch", "porta/ORT", "porta/torch"
  }
  {
    r1 = ratio($2, $3); r2 = ratio($2, $4)
    printf "%-12s %12s %12s %12s %10s %12s\n", $1, $2, $3, $4, r1, r2
    if (r1 != "-") { s1 += log($2 / $3); n1++ }
    if (r2 != "-") { s2 += log($2 / $4); n2++ }
  }
  END {
    g1 = n1 ? sprintf("%.2f", exp(s1 / n1)) : "-"
    g2 = n2 ? sprintf("%.2f", exp(s2 / n2)) : "-"
    printf "%-12s %12s %12s %12s %10s %12s\n", "geomean", "", "", "", g1, g2
  }'
