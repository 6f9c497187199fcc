#!/usr/bin/env bash
# Installs porta's system dependencies from Debian's packages; skips what is present.
# Usage: scripts/setup.sh [--with-gpu-toolchains]   (needs root or sudo for apt-get)
set -euo pipefail

PKGS=(
  cmake ninja-build g++ pkg-config ccache
  libdnnl-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  libgtest-dev libgmock-dev libbenchmark-dev
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools
  python3 python3-numpy python3-onnx python3-torch python3-torchvision
  libtorch-dev
)
if [[ "${PORTA_SETUP_HIP:-1}" == 1 ]]; then
  PKGS+=(hipcc libamdhip64-dev)
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
