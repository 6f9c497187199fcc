# shellcheck shell=bash
# Helpers shared by the bench/compare_*.sh scripts; sourced, not run.
# Expects ROOT (the repository root) to be set.

# Median of the space-separated numbers in $1, "-" if none (the mean of the middle two when
# there is an even count).
median_of() {
  [[ -z ${1// /} ]] && { echo "-"; return; }
  tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{v[NR] = $1} END {
    if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The value of `key=<value>` in the text $2 (its last occurrence), empty if there is none.
field_of() {
  sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2" | tail -1
}

# Whether the ONNX Runtime peer (node + bench/peers/node_modules/onnxruntime-node) is there;
# says how to install it when it is not.
have_ort() {
  if command -v node >/dev/null && [[ -d $ROOT/bench/peers/node_modules/onnxruntime-node ]]; then return 0; fi
  echo "[compare] ONNX Runtime skipped: npm install --prefix bench/peers onnxruntime-node@1.30.0" \
       "--onnxruntime-node-install=skip" >&2
  return 1
}

# "<1, 5, 15 min load> (<n> cores)": the machine's load, printed before and after a comparison.
load_now() {
  echo "$(cut -d' ' -f1-3 /proc/loadavg) ($(getconf _NPROCESSORS_ONLN) cores)"
}

# The zoo members to run, one per line: the NAMEs given (a NAME without the opset suffix means
# NAME_op<OPSET> when that folder exists), else every member of ZOO/members.txt with the suffix.
# Usage: mapfile -t NAMES < <(zoo_names "$ZOO" "$OPSET" "${NAMES[@]}")
zoo_names() {
  local zoo=$1 opset=$2 name
  shift 2
  if (($# == 0)); then
    while read -r name _; do
      if [[ $name == *_op$opset ]]; then echo "$name"; fi
    done < "$zoo/members.txt"
    return
  fi
  for name in "$@"; do
    if [[ ! -d $zoo/$name && -d $zoo/${name}_op$opset ]]; then echo "${name}_op$opset"; else echo "$name"; fi
  done
}

# `porta run`'s --input arguments for a zoo member's folder, one per line (from its inputs.txt).
# Usage: mapfile -t INPUTS < <(zoo_inputs "$ZOO/$name")
zoo_inputs() {
  local in file
  while read -r in file; do
    if [[ -n $in ]]; then printf '%s\n' --input "$in=$1/$file"; fi
  done < "$1/inputs.txt"
}

# Exits 2, saying so after "[TAG]", unless every value after the first two arguments is a
# positive integer; OPTIONS names the options they came from.
# Usage: require_positive TAG OPTIONS VALUE...
require_positive() {
  local tag=$1 what=$2 v
  shift 2
  for v in "$@"; do
    [[ $v =~ ^[1-9][0-9]*$ ]] || { echo "[$tag] $what take positive integers, got '$v'" >&2; exit 2; }
  done
}

# Exits 2, saying so after "[TAG]", unless the zoo folder DIR is there.
# Usage: require_zoo TAG DIR
require_zoo() {
  [[ -d $2 ]] || { echo "[$1] no zoo at $2 (ctest --test-dir build -R zoo.export exports it)" >&2; exit 2; }
}
