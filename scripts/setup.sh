#!/usr/bin/env bash
# Installs porta's system dependencies from Debian's packages; skips what is present.
# Usage: scripts/setup.sh           everything the test suite needs (needs root or sudo for apt-get)
#        scripts/setup.sh --demo    only what scripts/demo.sh needs: the cpu and vulkan backends
#                                   and the CLI (no test, PyTorch, HIP or ONNX Runtime packages)
set -euo pipefail

DEMO=0
if [[ "${1:-}" == "--demo" ]]; then DEMO=1; fi
PKGS=(
  cmake ninja-build g++ pkg-config ccache
  libdnnl-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libvulkan-dev glslc mesa-vulkan-drivers
)
if ((!DEMO)); then
  PKGS+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    vulkan-validationlayers vulkan-tools
    python3 python3-numpy python3-onnx python3-torch python3-torchvision
    python3-dev pybind11-dev python3-pytest
    libtorch-dev
  )
  if [[ "${PORTA_SETUP_HIP:-1}" == 1 ]]; then
    PKGS+=(hipcc libamdhip64-dev)
  fi
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  SUDO=""
  if [[ $(id -u) != 0 ]]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "[setup] all system packages present"
fi

if ((DEMO)); then exit 0; fi

# ONNX Runtime for plugins/ort (libporta_ort.so) and bench/peers, from npm: the 1.30 runtime
# (onnxruntime-node; its GPU-provider download skipped) and the API-29 C/C++ headers
# (com.github.asus4.onnxruntime). Skipped when present or when npm is missing.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORT_LIB="$ROOT/bench/peers/node_modules/onnxruntime-node/bin/napi-v6/linux/x64/libonnxruntime.so.1"
ORT_HDR="$ROOT/.cache/ort/node_modules/com.github.asus4.onnxruntime/Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/onnxruntime.framework/Headers/onnxruntime_ep_c_api.h"
if ! command -v npm >/dev/null 2>&1; then
  echo "[setup] npm not found: ONNX Runtime (plugins/ort, bench/peers) not installed"
else
  if [[ ! -f "$ORT_LIB" ]]; then
    echo "[setup] npm: onnxruntime-node (bench/peers/package.json) into bench/peers"
    npm install --prefix "$ROOT/bench/peers" --onnxruntime-node-install=skip --no-audit --no-fund
  fi
  if [[ ! -f "$ORT_HDR" ]]; then
    echo "[setup] npm: ONNX Runtime C/C++ headers (com.github.asus4.onnxruntime 0.4.9) into .cache/ort"
    mkdir -p "$ROOT/.cache/ort"
    npm install --prefix "$ROOT/.cache/ort" --no-save --no-audit --no-fund com.github.asus4.onnxruntime@0.4.9
    # Only the headers are used: drop the package's 385 MB of mobile and desktop binaries.
    hdr_dir="$(dirname "$ORT_HDR")"
    rm -rf "$ROOT/.cache/ort/headers.tmp"
    cp -r "$hdr_dir" "$ROOT/.cache/ort/headers.tmp"
    rm -rf "$ROOT/.cache/ort/node_modules/com.github.asus4.onnxruntime/Plugins"
    mkdir -p "$hdr_dir"
    cp -r "$ROOT/.cache/ort/headers.tmp/." "$hdr_dir/"
    rm -rf "$ROOT/.cache/ort/headers.tmp"
  fi
  echo "[setup] ONNX Runtime runtime and headers present"
fi
