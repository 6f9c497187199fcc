#!/usr/bin/env bash
# Downloads (does not install) the Debian packages porta builds against into .deps/, so a GPU
# machine whose image lacks them (no network there) can unpack them: scripts/gpu-check.sh
# extracts .deps/*.deb into .deps/root and builds against that prefix.
# Usage, on a Debian 12 machine with apt: scripts/gpu-deps.sh; then carry .deps to the GPU machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$ROOT/.deps"
grep -qxF '/.deps/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.deps/' >>"$(git -C "$ROOT" rev-parse --git-common-dir)/info/exclude"
cd "$ROOT/.deps"
apt-get download libdnnl2 libdnnl-dev ocl-icd-libopencl1 libonnx1 libonnx-dev libprotobuf32 \
  libprotobuf-dev libgtest-dev libgmock-dev zlib1g-dev
# The Vulkan loader, headers and glslc: gpu-check.sh also builds the Vulkan backend when the
# machine has NVIDIA's Vulkan driver (its ICD file), to run the GPU-style kernels there.
apt-get download libvulkan1 libvulkan-dev glslc libshaderc1 spirv-headers 2>/dev/null ||
  apt-get download libvulkan1 libvulkan-dev glslc
ls -l "$ROOT/.deps"
