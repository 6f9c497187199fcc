# shellcheck shell=bash
# Helpers shared by bench/compare_models.sh and bench/compare_zoo.sh; sourced, not run.
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
