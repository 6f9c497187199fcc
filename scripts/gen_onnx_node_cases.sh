#!/usr/bin/env bash
# Writes ONNX's backend node test cases (python3-onnx's own generator) into DIR:
#   DIR/node/<case>/model.onnx, DIR/node/<case>/test_data_set_<i>/{input,output}_<j>.pb
# (and DIR/real/... descriptors of downloadable models, which porta's tests ignore).
#
# Usage: scripts/gen_onnx_node_cases.sh DIR     generate (replaces DIR/node and DIR/real)
#        scripts/gen_onnx_node_cases.sh --check exit 0 when a python3 with onnx exists
#
# python3-onnx 1.12's generator still uses numpy aliases that numpy 1.24 removed (np.float,
# np.int, ...); they are restored before the generator is imported. The interpreter is
# $PORTA_PYTHON if set, else the first of `python3` on PATH and /usr/bin/python3 that can
# import onnx (a pyenv python3 may shadow Debian's).
set -euo pipefail

find_python() {
  local candidates=()
  [[ -n "${PORTA_PYTHON:-}" ]] && candidates+=("$PORTA_PYTHON")
  candidates+=(python3 /usr/bin/python3)
  local p
  for p in "${candidates[@]}"; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c "import onnx, numpy" >/dev/null 2>&1; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR | --check" >&2
  exit 2
fi

if ! PY=$(find_python); then
  echo "[gen_onnx_node_cases] no python3 that can import onnx and numpy" \
       "(install python3-onnx, or set PORTA_PYTHON)" >&2
  exit 1
fi
if [[ "$1" == "--check" ]]; then
  exit 0
fi

OUT=$1
mkdir -p "$OUT"
# Generate into a fresh sibling folder and swap it in, so an interrupted run never leaves a
# half-written case set behind that looks complete.
TMP=$(mktemp -d "$OUT/.gen.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

"$PY" - "$TMP" <<'PY'
import sys
import numpy as np

# Aliases removed in numpy 1.24 that onnx 1.12's case generators still reference.
for alias, value in (("float", float), ("int", int), ("bool", bool), ("object", object),
                     ("complex", complex), ("str", str)):
    if alias not in np.__dict__:
        setattr(np, alias, value)

from onnx.backend.test import cmd_tools  # noqa: E402  (after the aliases on purpose)

sys.argv = ["backend-test-tools", "generate-data", "-o", sys.argv[1]]
cmd_tools.main()
PY

for part in node real; do
  rm -rf "${OUT:?}/$part"
  if [[ -d "$TMP/$part" ]]; then mv "$TMP/$part" "$OUT/$part"; fi
done
echo "[gen_onnx_node_cases] $(ls "$OUT/node" | wc -l) node cases in $OUT/node"
