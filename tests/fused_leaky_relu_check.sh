#!/usr/bin/env bash
# Checks a built examples/fused_leaky_relu plugin with a porta CLI: `porta test --plugin` runs
# the op's cases on each device against the plugin's float64 reference and must take the
# plugin's own kernel there (path "native") for f32; then a model from ONNX (a Conv followed by
# the plugin's op) runs on each device and is compared with numpy's float64 result; and, when
# PORTA_TORCH_LIB names libporta_torch.so, the op from PyTorch (torch.ops.porta) on cpu tensors:
# its forward against torch's float64 formula, and gradcheck through its decomposition.
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
if [[ -n "${PORTA_TORCH_LIB:-}" ]]; then
  echo "== torch.ops.porta.com_stylegan2__FusedLeakyReLU (forward and gradcheck, float64, cpu)"
  PORTA_PLUGIN_PATH="$plugin" $python - "$PORTA_TORCH_LIB" <<'PY' || fail "torch.ops.porta check failed"
import math, sys
import torch
torch.ops.load_library(sys.argv[1])
op = torch.ops.porta.com_stylegan2__FusedLeakyReLU
torch.manual_seed(7)
x = torch.randn(2, 5, 3, 7, dtype=torch.float64, requires_grad=True)
b = torch.randn(5, dtype=torch.float64, requires_grad=True)
ref = torch.nn.functional.leaky_relu(x + b.view(1, -1, 1, 1), 0.2) * math.sqrt(2)
err = (op(x, b) - ref).abs().max().item()
assert err < 1e-12, f"forward differs from the float64 formula by {err}"
y = op(x, b, negative_slope=0.1, scale=3.0)
ref = torch.nn.functional.leaky_relu(x + b.view(1, -1, 1, 1), 0.1) * 3.0
assert (y - ref).abs().max().item() < 1e-12, "attributes were not applied"
assert torch.autograd.gradcheck(lambda x, b: op(x, b), (x, b)), "gradcheck failed"
print("torch.ops.porta: forward and gradients ok")
PY
fi
echo "fused_leaky_relu_check: ok"
