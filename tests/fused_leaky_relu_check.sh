#!/usr/bin/env bash
# Checks a built examples/fused_leaky_relu plugin with a porta CLI: `porta test --plugin` runs
# the op's cases on each device against the plugin's float64 reference and must take the
# plugin's own kernel there (path "native") for f32; then a model from ONNX (a Conv followed by
# the plugin's op) runs on each device and is compared with numpy's float64 result.
# Usage: fused_leaky_relu_check.sh PORTA_CLI PLUGIN.so SOURCE_DIR WORK_DIR DEVICE...
set -euo pipefail
porta=$1 plugin=$2 src=$3 work=$4
shift 4
devices=("$@")
python=/usr/bin/python3
fail() { echo "fused_leaky_relu_check: $*" >&2; exit 1; }
mkdir -p "$work"
list=$(IFS=,; echo "${devices[*]}")

echo "== porta test --plugin $(basename "$plugin") --device $list"
"$porta" test --plugin "$plugin" --device "$list" | tee "$work/test.txt" || fail "porta test failed"
grep -q " 0 failed" "$work/test.txt" || fail "porta test found failures"
for d in "${devices[@]}"; do
  grep -Eq "FusedLeakyReLU +feature_map +f32 +$d +native +.* ok" "$work/test.txt" ||
    fail "$d did not run the plugin's own kernel for f32"
done

echo "== a model from ONNX (Conv, then com.stylegan2::FusedLeakyReLU) on ${devices[*]}"
$python "$src/examples/fused_leaky_relu/make_model.py" "$work/model"
for d in "${devices[@]}"; do
  out="$work/out_${d/:/_}"
  "$porta" run "$work/model/model.onnx" --input X="$work/model/x.npy" --output-dir "$out" --device "$d" \
    --plugin "$plugin" >/dev/null || fail "porta run on $d failed"
  "$porta" ops "$work/model/model.onnx" --device "$d" --plugin "$plugin" | grep -q "FusedLeakyReLU  native" ||
    fail "the model's FusedLeakyReLU did not run natively on $d"
  echo -n "$d: "
  $python "$src/examples/fused_leaky_relu/check_output.py" "$work/model/expected.npy" "$out/Y.npy" ||
    fail "wrong result on $d"
done
echo "fused_leaky_relu_check: ok"
