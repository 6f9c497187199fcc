// porta gpu kernels — Conv's two cuda/hip implementations share these pieces: "cudnn"
// (conv_cudnn.cu: cuDNN's forward convolution, cuda builds that found cuDNN) is tried first,
// "implicit_gemm" (conv.cu: im2col and one batched GEMM, every cuda and hip build) after it.
#pragma once
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/window.hpp"

namespace porta::PORTA_GPU_NS {

/// The call's window geometry (kernel size from W, pads, strides, dilations).
opdef::WindowGeometry conv_window(const KernelContext& ctx);
/// Writes the bias (input 2, when present) broadcast over Y, for a convolution that then adds
/// onto Y; returns whether there was one.
bool conv_bias_into(KernelContext& ctx);

}  // namespace porta::PORTA_GPU_NS
