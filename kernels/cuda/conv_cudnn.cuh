// porta gpu kernels — Conv through cuDNN, used by conv.cu before its implicit-GEMM path.
// Present only in cuda builds configured with cuDNN found (PORTA_HAVE_CUDNN); elsewhere the
// function declines every call.
#pragma once
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/window.hpp"

namespace porta::PORTA_GPU_NS {

/// y = conv(x, w) (+ y when `accumulate`, which is how conv.cu adds the bias) with cuDNN's
/// forward convolution; the algorithm is chosen once per shape and cached. Returns false,
/// having queued nothing, when cuDNN is absent, disabled (PORTA_CUDNN=0) or does not take
/// the call (asymmetric pads, bf16, an output size it computes differently); the caller then
/// runs its own kernels.
bool conv_cudnn(const Tensor& x, const Tensor& w, Tensor& y, const opdef::WindowGeometry& g,
                int64_t group, bool accumulate, int device);

}  // namespace porta::PORTA_GPU_NS
