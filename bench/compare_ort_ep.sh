#!/usr/bin/env bash
# ONNX Runtime + the porta execution provider (cpu) vs plain ORT (its CPU EP) vs porta alone, on
# the example models (models/) and the real-model zoo (<zoo>/<name>/model.onnx; ctest's
# zoo.export fixture writes it to build/zoo), with build/bin/porta_ort_ep_compare
# (bench/ort_ep_compare.cpp): the three in one process per model, timed alternately, the same
# random inputs, outputs checked against ORT's within the zoo's tolerance (1e-4).
# For each thread count: the cost of the EP boundary per call (a one-node Relu model), then a
# table of median µs per run and the ratios EP/ORT, porta/ORT, EP/porta (< 1: the first is
# faster), their geometric means, and the 1-minute load average when each model's turn began
# (above cores + 1, porta's adaptive thread policy runs every kernel on one thread, inside the
# EP too; PORTA_THREAD_POLICY=fixed in the environment turns it off and is passed through).
#
# Usage: bench/compare_ort_ep.sh [--zoo DIR] [--threads "1 2"] [--runs N] [--rounds R]
#                                [--warmup W] [--opset 13|17] [--timeout S] [--no-models]
#                                [--no-zoo] [--bin PATH] [NAME ...]
#   --zoo      the zoo (default: build/zoo); NAMEs are its folders (default: every member of
#              its members.txt with the --opset suffix, default 17); `resnet18` = resnet18_op17
#   --threads  thread counts, each a full pass (default "1 2"): ORT's intra-op threads = T for
#              both ORT sessions and OMP_NUM_THREADS=T (porta's only thread setting)
#   --runs N   timed runs of each session per round (default 5); --rounds R (default 3);
#              --warmup W untimed runs of each first (default 2)
#   --no-models / --no-zoo  leave out models/ / the zoo; --timeout: seconds per process (600)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # load_now, require_positive
ZOO=$ROOT/build/zoo THREADS_LIST="1 2" RUNS=5 ROUNDS=3 WARMUP=2 OPSET=17 TIMEOUT=600
BIN=$ROOT/build/bin/porta_ort_ep_compare
MODELS=1 ZOO_ON=1
NAMES=()
while (($#)); do
  case $1 in
    --zoo) ZOO=$2; shift 2 ;;
    --threads) THREADS_LIST=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --opset) OPSET=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --no-models) MODELS=0; shift ;;
    --no-zoo) ZOO_ON=0; shift ;;
    --bin) BIN=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
# shellcheck disable=SC2086  # the thread counts split into words
require_positive ort-ep "--runs, --rounds, --timeout and --threads" "$RUNS" "$ROUNDS" "$TIMEOUT" $THREADS_LIST
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "[ort-ep] --warmup takes a non-negative integer, got '$WARMUP'" >&2; exit 2; }
[[ -x $BIN ]] || { echo "[ort-ep] $BIN is not built (needs ORT: scripts/setup.sh; then build target porta_ort_ep_compare)" >&2; exit 2; }

DIRS=()
if ((MODELS)); then
  for d in "$ROOT"/models/*/; do
    if [[ -f $d/model.onnx ]]; then DIRS+=("${d%/}"); fi
  done
fi
if ((ZOO_ON)); then
  [[ -d $ZOO ]] || { echo "[ort-ep] no zoo at $ZOO (ctest --test-dir build -R zoo.export exports it; --no-zoo leaves it out)" >&2; exit 2; }
  ZOO=$(cd "$ZOO" && pwd)
  if ((${#NAMES[@]} == 0)); then
    if [[ -f $ZOO/members.txt ]]; then
      while read -r name _; do
        if [[ $name == *_op$OPSET ]]; then NAMES+=("$name"); fi
      done < "$ZOO/members.txt"
    else
      for d in "$ZOO"/*_op"$OPSET"/; do
        if [[ -f $d/model.onnx ]]; then NAMES+=("$(basename "$d")"); fi
      done
    fi
  fi
  for name in "${NAMES[@]}"; do
    if [[ ! -d $ZOO/$name && -d $ZOO/${name}_op$OPSET ]]; then name=${name}_op$OPSET; fi
    DIRS+=("$ZOO/$name")
  done
fi
((${#DIRS[@]})) || { echo "[ort-ep] no model to run" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CORES=$(getconf _NPROCESSORS_ONLN)
ARGS=(--runs "$RUNS" --rounds "$ROUNDS" --warmup "$WARMUP")

echo "program: $BIN (built $(date -u -d @"$(stat -c %Y "$BIN")" '+%Y-%m-%d %H:%M UTC'))"
echo "models: ${#DIRS[@]}; threads: $THREADS_LIST; $WARMUP warm-up + $ROUNDS round(s) of $RUNS timed runs per session;" \
     "PORTA_THREAD_POLICY=${PORTA_THREAD_POLICY:-adaptive (default)}"
echo "load before: $(load_now), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
for t in $THREADS_LIST; do
  : > "$TMP/results.$t"
  echo "[ort-ep] $t thread(s): EP boundary (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  out=$(timeout "$TIMEOUT" "$BIN" --threads "$t" "${ARGS[@]}" --boundary 2>&1) || true
  grep '^BOUNDARY' <<<"$out" > "$TMP/boundary.$t" || echo "BOUNDARY FAILED: $(tail -1 <<<"$out")" > "$TMP/boundary.$t"
  for dir in "${DIRS[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "[ort-ep] $t thread(s), $(basename "$dir") (load $load)" >&2
    rc=0
    out=$(timeout "$TIMEOUT" "$BIN" --threads "$t" "${ARGS[@]}" "$dir" 2>&1) || rc=$?
    line=$(grep '^RESULT' <<<"$out" | tail -1 || true)
    if [[ -z $line ]]; then
      if ((rc == 124)); then why="timed out after $TIMEOUT s"; else why=$(sed '/^[[:space:]]*$/d' <<<"$out" | tail -1); fi
      line="RESULT model=$(basename "$dir") threads=$t error=\"$why\""
    fi
    grep '^  MISMATCH' <<<"$out" >&2 || true
    echo "$line load=$load" >> "$TMP/results.$t"
    echo "  $line" >&2
  done
done
echo "load after:  $(load_now), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"

for t in $THREADS_LIST; do
  echo
  echo "== $t thread(s): ORT intra-op threads = $t, OMP_NUM_THREADS=$t =="
  sed 's/^BOUNDARY /EP boundary per call (one Relu): /' "$TMP/boundary.$t"
  awk -v cores="$CORES" '
    function field(k,   i, n, kv) {
      for (i = 2; i <= NF; ++i) { n = index($i, "="); if (substr($i, 1, n - 1) == k) return substr($i, n + 1) }
      return ""
    }
    BEGIN {
      fmt = "%-36s %11s %11s %11s %7s %9s %8s %5s %9s\n"
      printf fmt, "model", "ORT µs", "EP µs", "porta µs", "EP/ORT", "porta/ORT", "EP/porta", "load", "agree"
    }
    {
      m = field("model")
      if (field("error") != "" || field("ort_us") == "") {
        sub(/^.*error=/, ""); printf "%-36s failed: %s\n", m, $0; nf++; next
      }
      a = field("ep_ort"); b = field("porta_ort"); c = field("ep_porta")
      printf fmt, m, field("ort_us"), field("ep_us"), field("porta_us"), sprintf("%.2f", a), sprintf("%.2f", b),
             sprintf("%.2f", c), field("load"), field("agree") == 1 ? "ok" : "NO " field("max_rel")
      if (field("agree") != 1) bad++
      if (field("load") > cores + 1) busy++
      sa += log(a); sb += log(b); sc += log(c); n++
      if (a > 1) epslow++
    }
    END {
      if (n) printf "geomean over %d model(s): EP/ORT %.2f, porta/ORT %.2f, EP/porta %.2f; EP slower than ORT on %d\n",
                    n, exp(sa / n), exp(sb / n), exp(sc / n), epslow
      if (bad) printf "%d model(s) disagreed with ORT beyond the tolerance\n", bad
      if (nf) printf "%d model(s) failed\n", nf
      if (busy) printf "note: %d model(s) ran at a load above %d (cores + 1): porta'"'"'s adaptive thread policy ran every kernel on one thread\n", busy, cores + 1
    }' "$TMP/results.$t"
done
