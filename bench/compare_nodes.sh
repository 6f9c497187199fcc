#!/usr/bin/env bash
# Where porta and ONNX Runtime (CPU EP) spend their time on one model, node by node: runs
# `porta run --profile` (the median of --runs runs per node) and ORT with its profiler on,
# then bench/compare_nodes.py matches the nodes by name.
#
# Usage: bench/compare_nodes.sh MODEL_DIR [--threads T] [--runs N] [--top K] [--porta PATH]
#   MODEL_DIR  a folder with model.onnx and inputs.txt (the zoo's build/zoo/<name>, models/<name>)
#   --threads  OMP_NUM_THREADS for porta and intraOpNumThreads for ORT (default 1)
#   --runs     profiled runs of each (default 20); --top: rows per table (default 25)
# Profiling adds overhead to both (ORT's more); compare nodes, not the totals with
# bench/compare_zoo.sh's.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # have_ort, load_now
DIR=${1:?usage: bench/compare_nodes.sh MODEL_DIR [--threads T] [--runs N] [--top K] [--porta PATH]}
shift
THREADS=1 RUNS=20 TOP=25 PORTA=$ROOT/build/bin/porta
while (($#)); do
  case $1 in
    --threads) THREADS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --top) TOP=$2; shift 2 ;;
    --porta) PORTA=$2; shift 2 ;;
    *) echo "compare_nodes: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -f $DIR/model.onnx ]] || { echo "compare_nodes: no model.onnx in $DIR" >&2; exit 2; }
have_ort || exit 3
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
inputs=()
while read -r name file; do
  [[ -n $name ]] && inputs+=(--input "$name=$DIR/$file")
done <"$DIR/inputs.txt"
echo "load before: $(load_now)"
OMP_NUM_THREADS=$THREADS "$PORTA" run "$DIR/model.onnx" "${inputs[@]}" --profile --profile-runs "$RUNS" >"$WORK/porta.txt"
line=$(node "$ROOT/bench/peers/ort_bench.js" --models-dir "$(dirname "$DIR")" --threads "$THREADS" \
  --repeat "$RUNS" --warmup 3 --profile "$WORK/ort" "$(basename "$DIR")")
profile=$(field_of profile "$line")
[[ -f $profile ]] || { echo "compare_nodes: ORT wrote no profile: $line" >&2; exit 1; }
echo "load after: $(load_now); threads $THREADS"
"$(command -v /usr/bin/python3 || command -v python3)" "$ROOT/bench/compare_nodes.py" "$WORK/porta.txt" "$profile" --top "$TOP" --model "$DIR/model.onnx"
