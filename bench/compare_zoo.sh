#!/usr/bin/env bash
# porta vs ONNX Runtime (CPU EP) on the real-model zoo (<zoo>/<name>/model.onnx with its
# inputs.txt / outputs.txt / .npy files; ctest's zoo.export fixture writes it to build/zoo).
# For each thread count, a table of: µs per inference (the median of a process's timed runs,
# or with --stat min its fastest run), porta/ORT (< 1: porta is
# faster), peak resident memory of each process (MiB, /usr/bin/time %M) and session creation
# time (ms: porta's `create_ms=` when `porta run` prints one, else "-"; ORT's
# InferenceSession.create), then the geometric mean of porta/ORT and how many models porta is
# slower on, and the 1-minute load average when each model's turn began (above cores + 1,
# porta's adaptive thread policy runs every kernel on one thread; the table says so). Every
# measurement is its own process, porta and ORT alternating model by model;
# with --rounds R the whole pass runs R times and each cell is the median of the R values.
# A model that fails (or passes --timeout) on one side is reported with the last line of its
# error and left out of the geometric mean.
#
# Usage: bench/compare_zoo.sh [--zoo DIR] [--threads "1 2"] [--repeat N] [--warmup W]
#                             [--rounds R] [--opset 13|17] [--timeout S] [--porta PATH] [NAME ...]
#   --zoo      the zoo (default: build/zoo); NAMEs are its folders (default: every member of
#              its members.txt with the --opset suffix, default 17); `resnet18` = resnet18_op17
#   --threads  thread counts, each a full pass (default "1 2"): OMP_NUM_THREADS=T for both
#              processes (porta's only thread setting), and ORT's intraOpNumThreads=T
#   --repeat N timed runs per process (default 20); --warmup W: ORT's warm-up runs (default 5;
#              `porta run` always does 2 untimed runs first)
#   --timeout  seconds one process may take (default 900)
#   --stat     median (default) or min: which of a process's timed runs stands for it. On a
#              shared machine other tenants only ever slow a run down, so the fastest run of
#              each process varies far less from round to round than the median does.
# Needs node + bench/peers/node_modules/onnxruntime-node (see bench/peers/ort_bench.js).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/compare_common.sh
source "$ROOT/bench/compare_common.sh"  # median_of, field_of, have_ort, load_now, require_*
ZOO=$ROOT/build/zoo THREADS_LIST="1 2" REPEAT=20 WARMUP=5 ROUNDS=1 OPSET=17 TIMEOUT=900 STAT=median
PORTA=$ROOT/build/bin/porta
NAMES=()
while (($#)); do
  case $1 in
    --zoo) ZOO=$2; shift 2 ;;
    --threads) THREADS_LIST=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --opset) OPSET=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --porta) PORTA=$2; shift 2 ;;
    --stat) STAT=$2; shift 2 ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
# shellcheck disable=SC2086  # the thread counts split into words
require_positive zoo "--repeat, --rounds, --timeout and --threads" "$REPEAT" "$ROUNDS" "$TIMEOUT" $THREADS_LIST
[[ $STAT == median || $STAT == min ]] || { echo "[zoo] --stat takes median or min, got '$STAT'" >&2; exit 2; }
[[ $WARMUP =~ ^[0-9]+$ ]] || { echo "[zoo] --warmup takes a non-negative integer, got '$WARMUP'" >&2; exit 2; }
[[ -n ${THREADS_LIST// /} ]] || { echo "[zoo] --threads is empty" >&2; exit 2; }
require_zoo zoo "$ZOO"
ZOO=$(cd "$ZOO" && pwd)
if [[ $PORTA == */* && -d $(dirname "$PORTA") ]]; then PORTA=$(cd "$(dirname "$PORTA")" && pwd)/$(basename "$PORTA"); fi
have_ort || exit 2
[[ -x /usr/bin/time ]] || { echo "[zoo] needs GNU time at /usr/bin/time (apt-get install time)" >&2; exit 2; }

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
  ((${#NAMES[@]})) || { echo "[zoo] no *_op$OPSET member in $ZOO" >&2; exit 2; }
else
  for i in "${!NAMES[@]}"; do
    if [[ ! -d $ZOO/${NAMES[i]} && -d $ZOO/${NAMES[i]}_op$OPSET ]]; then NAMES[i]=${NAMES[i]}_op$OPSET; fi
  done
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Per "<threads>:<model>": space-separated values, one per round (µs, KiB, ms, the 1-minute
# load average when the model's turn began), and the last error of each side.
declare -A P_US P_KIB P_MS P_ERR O_US O_KIB O_MS O_ERR LOAD
CORES=$(getconf _NPROCESSORS_ONLN)

mtime() { stat -c %Y "$1" 2>/dev/null || echo 0; }
# porta may be rebuilt while this runs: wait up to 2 minutes for a missing binary.
wait_for_porta() {
  local i
  for ((i = 0; i < 24; ++i)); do [[ -x $PORTA ]] && return 0; sleep 5; done
  [[ -x $PORTA ]]
}
wait_for_porta || { echo "[zoo] $PORTA is not there (ninja -C build porta_cli)" >&2; exit 2; }
PORTA_MTIME=$(mtime "$PORTA")

# measure OUT_VAR KIB_VAR THREADS CMD...: runs CMD under OMP_NUM_THREADS, --timeout and
# /usr/bin/time; its stdout + stderr go to OUT_VAR, its peak RSS (KiB) to KIB_VAR ("" if
# unknown); returns CMD's exit status (124: timed out).
# shellcheck disable=SC2034  # out_ and kib_ are namerefs: set for the caller
measure() {
  local -n out_=$1 kib_=$2
  local threads=$3 rc=0
  shift 3
  out_=$(OMP_NUM_THREADS=$threads timeout "$TIMEOUT" /usr/bin/time -o "$TMP/rss" -f '%M' "$@" 2>&1) || rc=$?
  kib_=$(tail -1 "$TMP/rss" 2>/dev/null || true)
  [[ $kib_ =~ ^[0-9]+$ ]] || kib_=""
  rm -f "$TMP/rss"
  return $rc
}

# What went wrong, in one line: the last non-empty line of the output, or the timeout.
failure() {  # failure RC OUTPUT
  if (($1 == 124)); then echo "timed out after ${TIMEOUT} s"; return; fi
  local last
  last=$(sed '/^[[:space:]]*$/d' <<<"$2" | tail -1)
  echo "${last:-exit status $1, no output}"
}

run_porta() {  # run_porta THREADS NAME
  local t=$1 name=$2 dir=$ZOO/$2 key=$1:$2 out kib rc us ms in file attempt
  local args=(run "$dir/model.onnx" --repeat "$REPEAT")
  if [[ -f $dir/inputs.txt ]]; then
    while read -r in file; do
      if [[ -n $in ]]; then args+=(--input "$in=$dir/$file"); fi
    done < "$dir/inputs.txt"
  fi
  for attempt in 1 2; do
    wait_for_porta || true
    rc=0
    measure out kib "$t" "$PORTA" "${args[@]}" || rc=$?
    us=$(field_of "${STAT}_us" "$out")
    if ((rc == 0)) && [[ -n $us ]]; then break; fi
    # A failure while the binary was being replaced (missing, or newer than before) gets one retry.
    if ((attempt == 1)) && [[ ! -x $PORTA || $(mtime "$PORTA") != "$PORTA_MTIME" ]]; then
      echo "[zoo] porta failed on $name while $PORTA changed; retrying in 60 s" >&2
      sleep 60; PORTA_MTIME=$(mtime "$PORTA"); continue
    fi
    break
  done
  if ((rc == 0)) && [[ -n $us ]]; then
    P_US[$key]+=" $us"
    if [[ -n $kib ]]; then P_KIB[$key]+=" $kib"; fi
    ms=$(field_of create_ms "$out")
    if [[ -n $ms ]]; then P_MS[$key]+=" $ms"; fi
    echo "  porta $us µs, ${kib:-?} KiB${ms:+, create $ms ms}" >&2
  else
    P_ERR[$key]=$(failure "$rc" "$out")
    echo "  porta FAILED: ${P_ERR[$key]}" >&2
  fi
}

run_ort() {  # run_ort THREADS NAME
  local t=$1 name=$2 key=$1:$2 out kib rc=0 us ms err
  measure out kib "$t" node "$ROOT/bench/peers/ort_bench.js" --models-dir "$ZOO" --repeat "$REPEAT" \
    --warmup "$WARMUP" --threads "$t" "$name" || rc=$?
  us=$(field_of "${STAT}_us" "$out")
  if ((rc == 0)) && [[ -n $us ]]; then
    O_US[$key]+=" $us"
    if [[ -n $kib ]]; then O_KIB[$key]+=" $kib"; fi
    ms=$(field_of create_ms "$out")
    if [[ -n $ms ]]; then O_MS[$key]+=" $ms"; fi
    echo "  ORT   $us µs, ${kib:-?} KiB${ms:+, create $ms ms}, rel_err $(field_of rel_err "$out")" >&2
  else
    err=$(sed -n 's/.*error="\(.*\)"$/\1/p' <<<"$out" | tail -1)
    O_ERR[$key]=${err:-$(failure "$rc" "$out")}
    if ((rc == 124)); then O_ERR[$key]=$(failure 124 ""); fi
    echo "  ORT   FAILED: ${O_ERR[$key]}" >&2
  fi
}

# Context for the memory columns: each process with its runtime loaded and no model.
base_porta=""; base_ort=""
measure _out base_porta 1 "$PORTA" version || true
measure _out base_ort 1 node -e "require('$ROOT/bench/peers/node_modules/onnxruntime-node')" || true
ort_version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' \
  "$ROOT/bench/peers/node_modules/onnxruntime-node/package.json" | head -1)

echo "porta: $PORTA ($("$PORTA" version 2>/dev/null || echo "not built"), built $(date -u -d @"$PORTA_MTIME" '+%Y-%m-%d %H:%M UTC'))"
echo "ORT:   onnxruntime-node ${ort_version:-?} (CPU EP, all graph optimizations), node $(node --version)"
echo "zoo:   $ZOO, ${#NAMES[@]} model(s); threads: $THREADS_LIST; $REPEAT timed runs, $ROUNDS round(s), --stat $STAT"
echo "load before: $(load_now), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
for ((round = 1; round <= ROUNDS; ++round)); do
  for t in $THREADS_LIST; do
    for name in "${NAMES[@]}"; do
      load=$(cut -d' ' -f1 /proc/loadavg)
      LOAD[$t:$name]+=" $load"
      echo "[zoo] round $round/$ROUNDS, $t thread(s), $name (load $load)" >&2
      if [[ ! -f $ZOO/$name/model.onnx ]]; then
        P_ERR[$t:$name]="no $ZOO/$name/model.onnx"; O_ERR[$t:$name]=${P_ERR[$t:$name]}
        echo "  skipped: ${P_ERR[$t:$name]}" >&2
        continue
      fi
      run_porta "$t" "$name"
      run_ort "$t" "$name"
    done
  done
done
echo "load after:  $(load_now), $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
[[ $(mtime "$PORTA") == "$PORTA_MTIME" ]] || echo "warning: $PORTA was rebuilt during the run"

WIDTH=5
for name in "${NAMES[@]}"; do if ((${#name} > WIDTH)); then WIDTH=${#name}; fi; done
SUMMARY=""
for t in $THREADS_LIST; do
  echo
  echo "== $t thread(s): OMP_NUM_THREADS=$t for both, ORT intraOpNumThreads=$t =="
  for name in "${NAMES[@]}"; do
    key=$t:$name
    pus=$(median_of "${P_US[$key]:-}"); ous=$(median_of "${O_US[$key]:-}")
    if [[ $pus == - && -n ${P_ERR[$key]:-} ]]; then pus=failed; fi
    if [[ $ous == - && -n ${O_ERR[$key]:-} ]]; then ous=failed; fi
    echo "$name $pus $ous $(median_of "${P_KIB[$key]:-}") $(median_of "${O_KIB[$key]:-}")" \
         "$(median_of "${P_MS[$key]:-}") $(median_of "${O_MS[$key]:-}") $(median_of "${LOAD[$key]:-}")"
  done | awk -v w="$WIDTH" -v t="$t" -v repeat="$REPEAT" -v warmup="$WARMUP" -v rounds="$ROUNDS" -v stat="$STAT" \
          -v cores="$CORES" -v summary="$TMP/summary" '
      function num(x) { return x != "-" && x != "failed" }
      function mib(k) { return k == "-" ? "-" : sprintf("%.1f", k / 1024) }
      function ms(x) { return x == "-" ? "-" : sprintf("%.1f", x) }
      BEGIN {
        printf "porta, ORT: %s µs per inference of %s timed runs (ORT after %s warm-up runs, porta run\n", stat == "min" ? "fastest" : "median", repeat, warmup
        printf "after 2), median of %s round(s); MiB: peak RSS of the process; create: session creation, ms;\n", rounds
        printf "load: 1-minute load average when the model'"'"'s turn began\n"
        fmt = "%-" w "s %10s %10s %9s %9s %9s %12s %12s %5s\n"
        printf fmt, "model", "porta", "ORT", "porta/ORT", "porta MiB", "ORT MiB", "porta create", "ORT create", "load"
      }
      {
        r = "-"
        if (num($2) && num($3) && $3 > 0) {
          r = sprintf("%.2f", $2 / $3); s += log($2 / $3); n++
          if ($2 > $3) slower++
        }
        printf fmt, $1, $2, $3, r, mib($4), mib($5), ms($6), ms($7), $8
        if ($8 != "-" && $8 > cores + 1) busy++
      }
      END {
        g = n ? sprintf("%.2f", exp(s / n)) : "-"
        printf "geomean porta/ORT: %s over %d model(s); porta slower on %d of %d\n", g, n, slower, n
        if (busy)
          printf "note: %d model(s) ran at a load above %d (cores + 1), where porta'"'"'s adaptive thread policy runs\nevery kernel on one thread (kernels/cpu/thread_policy.cpp; PORTA_THREAD_POLICY=fixed turns it off)\n", busy, cores + 1
        print t "T " g " (porta slower on " slower + 0 " of " n + 0 ")" > summary
      }'
  SUMMARY+="$(cat "$TMP/summary"); "
  for name in "${NAMES[@]}"; do
    if [[ -z ${P_US[$t:$name]:-} && -n ${P_ERR[$t:$name]:-} ]]; then echo "porta failed on $name: ${P_ERR[$t:$name]}"; fi
    if [[ -z ${O_US[$t:$name]:-} && -n ${O_ERR[$t:$name]:-} ]]; then echo "ORT failed on $name: ${O_ERR[$t:$name]}"; fi
  done
done
echo
echo "geomean porta/ORT by threads: ${SUMMARY%; }"
echo "baseline peak RSS (runtime loaded, no model): porta $(awk -v k="${base_porta:-}" 'BEGIN { print k == "" ? "-" : sprintf("%.1f", k / 1024) }') MiB" \
     "(porta version), ORT $(awk -v k="${base_ort:-}" 'BEGIN { print k == "" ? "-" : sprintf("%.1f", k / 1024) }') MiB" \
     "(node + onnxruntime-node); the MiB columns include it"
