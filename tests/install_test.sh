#!/usr/bin/env bash
# Installs porta into a temporary prefix, then builds against the installed copy only:
# examples/plugin (find_package(porta), out of tree), examples/fused_leaky_relu
# (porta_add_plugin; checked on every available device), examples/consumer (find_package) and
# examples/consumer/hello.c (pkg-config). Runs the example model through the plugin on every
# available device, natively and (kernel disabled) through the op's composite, and checks
# that the installed CLI says which kernels came from the plugin. When the Python package was
# built, imports the installed one (no LD_LIBRARY_PATH) and runs a model and an eager op.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/porta_install_test.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
python=/usr/bin/python3

step() { echo "== $*"; }
fail() { echo "install_test: $*" >&2; exit 1; }

step "install into $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/porta/porta.h include/porta/plugin.h include/porta/porta.hpp include/porta/gpu_plugin.hpp \
         include/porta/gpu/backends/cuda/compat.hpp include/porta/gpu/backends/gpu_emu/emu_runtime.hpp bin/porta; do
  [[ -e $prefix/$f ]] || fail "missing $f in the installed tree"
done
[[ -n $(find "$prefix" -name porta-plugin.cmake) ]] || fail "porta-plugin.cmake (porta_add_plugin) not installed"
libporta=$(find "$prefix" -name 'libporta.so*' | head -1)
[[ -n $libporta ]] || fail "libporta.so not installed"
pcdir=$(dirname "$(find "$prefix" -name porta.pc | head -1)")
[[ -d $pcdir ]] || fail "porta.pc not installed"

step "build examples/plugin against the installed porta"
cmake -S "$src/examples/plugin" -B "$work/plugin" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$work/plugin.log" ||
  { cat "$work/plugin.log"; fail "configuring examples/plugin failed"; }
grep -E "example_swish:" "$work/plugin.log" || true
cmake --build "$work/plugin" >/dev/null
plugin=$work/plugin/libexample_swish.so
[[ -f $plugin ]] || fail "examples/plugin did not produce libexample_swish.so"

torchlib=$(find "$prefix" -name 'libporta_torch.so' | head -1)
if [[ -n $torchlib ]]; then
  step "libporta_torch.so loads from the installed tree without LD_LIBRARY_PATH; the plugin's op is in torch.ops.porta"
  (cd "$work" && env -u LD_LIBRARY_PATH PORTA_PLUGIN_PATH="$plugin" $python -c "
import sys, torch
torch.ops.load_library(sys.argv[1])
x = torch.randn(3, 5, dtype=torch.float32, requires_grad=True)
y = torch.ops.porta.com_example__ScaledSwish(x, alpha=1.5)
x64 = x.detach().double()
assert (y.double() - x64 * torch.sigmoid(1.5 * x64)).abs().max() < 1e-5
y.sum().backward()
assert x.grad is not None
print('torch.ops.porta.ScaledSwish: ok')" "$torchlib") || fail "the installed libporta_torch.so cannot run the plugin's op"
fi

pymodule=$(find "$prefix" -name '_porta*.so' | head -1)
if [[ -z $pymodule ]] && compgen -G "$build/python/porta/_porta*.so" >/dev/null; then
  fail "the Python package was built ($build/python/porta) but not installed"
fi
if [[ -n $pymodule ]]; then
  step "import porta from the installed tree (libporta found through the module's RPATH)"
  pydir=$(dirname "$(dirname "$pymodule")")
  (cd "$work" && env -u LD_LIBRARY_PATH PYTHONPATH="$pydir" $python -c "
import sys, numpy as np, porta
assert porta.__file__.startswith(sys.argv[1]), porta.__file__
s = porta.Session(sys.argv[2] + '/models/mlp/model.onnx')
y, = s.run(None, {'x': np.load(sys.argv[2] + '/models/mlp/input_0.npy')})
np.testing.assert_allclose(y, np.load(sys.argv[2] + '/models/mlp/output_0.npy'), rtol=2e-3, atol=2e-4)
a = np.random.rand(3, 4)
np.testing.assert_allclose(porta.ops.MatMul(a, a.T).numpy(), a @ a.T, rtol=1e-12)
print('installed porta', porta.__version__, 'from', porta.__file__, ': ok')" "$pydir" "$src") ||
    fail "the installed Python package cannot run a model"
fi

step "build examples/consumer (find_package) and hello.c (pkg-config)"
cmake -S "$src/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
cc "$src/examples/consumer/hello.c" $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs porta) -o "$work/hello"
"$work/hello"

step "a component this porta lacks is refused"
mkdir -p "$work/needs_cuda"
printf 'cmake_minimum_required(VERSION 3.20)\nproject(x NONE)\nfind_package(porta REQUIRED COMPONENTS nosuchbackend)\n' \
  >"$work/needs_cuda/CMakeLists.txt"
if cmake -S "$work/needs_cuda" -B "$work/needs_cuda/b" -DCMAKE_PREFIX_PATH="$prefix" >"$work/needs.log" 2>&1; then
  fail "find_package(porta COMPONENTS nosuchbackend) succeeded"
fi
grep -q "built without the 'nosuchbackend' backend" "$work/needs.log" || { cat "$work/needs.log"; fail "no clear message"; }

step "run the model through the plugin"
$python "$src/examples/plugin/make_model.py" "$work/swish.onnx" 1.5
"$work/consumer/consumer" "$work/swish.onnx" "$plugin" 1.5 | tee "$work/native.txt"
grep -q "^cpu swish native" "$work/native.txt" || fail "cpu did not run the plugin's kernel"
if grep -q "^vulkan" "$work/native.txt"; then
  grep -q "^vulkan:0 swish native" "$work/native.txt" || fail "vulkan did not run the plugin's kernel"
fi

step "without the plugin's Vulkan kernel, Vulkan runs the op's composite"
PORTA_DISABLE_KERNELS=vulkan:ScaledSwish "$work/consumer/consumer" "$work/swish.onnx" "$plugin" 1.5 | tee "$work/composite.txt"
if grep -q "^vulkan" "$work/composite.txt"; then
  grep -q "^vulkan:0 swish composite" "$work/composite.txt" || fail "vulkan did not fall back to the composite"
fi

step "the installed CLI names the plugin as the kernels' source"
PORTA_PLUGIN_PATH=$plugin "$prefix/bin/porta" devices --kernels >"$work/kernels.txt"
grep -q "ScaledSwish f32 (example_swish)" "$work/kernels.txt" || fail "porta devices --kernels does not list the plugin's kernel"
grep "ScaledSwish" "$work/kernels.txt"
PORTA_PLUGIN_PATH=$plugin "$prefix/bin/porta" ops "$work/swish.onnx" | tee "$work/ops.txt"
grep -q "ScaledSwish  native  cpu kernel from example_swish for f32" "$work/ops.txt" || fail "porta ops does not name the plugin"
step "porta test runs the plugin's cases on every device against its composite"
"$prefix/bin/porta" test --plugin "$plugin" | tee "$work/test.txt"
grep -q "com.example::ScaledSwish *odd *f32 *cpu *native .* ok" "$work/test.txt" || fail "porta test did not run the cpu kernel"
grep -q " 0 failed" "$work/test.txt" || fail "porta test found failures"
"$prefix/bin/porta" bench --plugin "$plugin" --op com.example::ScaledSwish --device cpu --min-runs 1 --min-time 0 \
  --warmup 0 --no-progress | grep -q "1024x1024" || fail "porta bench found no case of the plugin's op"

step "build examples/fused_leaky_relu (porta_add_plugin: C, a Vulkan shader, a .cu) against the installed porta"
cmake -S "$src/examples/fused_leaky_relu" -B "$work/flr" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$work/flr.log" ||
  { cat "$work/flr.log"; fail "configuring examples/fused_leaky_relu failed"; }
grep -E "^-- fused_leaky_relu:" "$work/flr.log"
cmake --build "$work/flr" >/dev/null || fail "building examples/fused_leaky_relu failed"
# Every available device of the devices the plugin has kernels for (cuda/hip would need a GPU).
mapfile -t flr_devices < <("$prefix/bin/porta" devices | awk '$2 == "available" && $1 ~ /^(cpu|vulkan:0|gpu_emu:[01])$/ {print $1}')
bash "$src/tests/fused_leaky_relu_check.sh" "$prefix/bin/porta" "$work/flr/libfused_leaky_relu.so" "$src" "$work/flr_check" \
  "${flr_devices[@]}"
echo "install_test: ok"
