// FusedLeakyReLU's GPU kernel: the CUDA kernel of StyleGAN2's extension, one source for three
// builds (porta_add_plugin): nvcc for cuda, hipcc for hip, the host C++ compiler for gpu_emu
// (porta's SIMT emulator, which runs it on the cpu at warp 32 and 64).
//   Y[i] = leaky_relu(X[i] + bias[c], negative_slope) * scale,  c = (i / inner) % channels
// What changed from the extension: the pybind binding and torch's tensors went; the kernel
// takes porta's device addresses and runs on porta's stream; the launch goes through
// porta::gpu_plugin::launch (which the emulator sees) instead of a triple-chevron launch.
#include <cstdint>
#include <cstring>

#include "porta/gpu_plugin.hpp"

namespace {

const porta_plugin_api* porta_api;  // this build's copy, set when it registers

template <typename T>
__global__ void fused_leaky_relu_kernel(const T* x, const T* bias, T* y, int64_t count, int64_t channels,
                                        int64_t inner, T negative_slope, T scale) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += stride) {
    T v = x[i] + bias[(i / inner) % channels];
    y[i] = (v >= T(0) ? v : v * negative_slope) * scale;
  }
}

template <typename T>
porta_status launch_typed(const void* x, const void* bias, void* y, int64_t count, int64_t channels, int64_t inner,
                          double slope, double scale, void* stream) {
  constexpr int kThreads = 256;
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 4096 ? blocks : 4096);  // grid-stride beyond
  return porta::gpu_plugin::launch<fused_leaky_relu_kernel<T>>(
      porta_api, "fused_leaky_relu_kernel", dim3(grid), dim3(kThreads), 0, stream, static_cast<const T*>(x),
      static_cast<const T*>(bias), static_cast<T*>(y), count, channels, inner, static_cast<T>(slope),
      static_cast<T>(scale));
}

porta_status fused_leaky_relu_gpu(porta_kernel_context* ctx, void*) {
  porta_tensor tx, tb, ty;
  porta_status s;
  if ((s = porta_api->kernel_input(ctx, 0, &tx)) || (s = porta_api->kernel_input(ctx, 1, &tb)) ||
      (s = porta_api->kernel_output(ctx, 0, &ty)))
    return s;
  // Device addresses of the tensors and the stream porta runs this device's work on.
  void *x, *bias, *y, *stream;
  if ((s = porta_api->tensor_device_pointer(tx, &x)) || (s = porta_api->tensor_device_pointer(tb, &bias)) ||
      (s = porta_api->tensor_device_pointer(ty, &y)) || (s = porta_api->kernel_stream(ctx, &stream)))
    return s;
  porta_attrs attrs;
  double slope, scale;
  if ((s = porta_api->kernel_attrs(ctx, &attrs)) || (s = porta_api->attrs_get_float(attrs, "negative_slope", &slope)) ||
      (s = porta_api->attrs_get_float(attrs, "scale", &scale)))
    return s;
  int64_t dims[16];
  size_t rank;
  porta_dtype dtype;
  if ((s = porta_api->tensor_rank(tx, &rank)) || (s = porta_api->tensor_shape(tx, dims, 16)) || (s = porta_api->tensor_dtype(tx, &dtype)))
    return s;
  int64_t inner = 1;
  for (size_t i = 2; i < rank; ++i) inner *= dims[i];
  const int64_t count = dims[0] * dims[1] * inner;
  if (count == 0) return PORTA_OK;
  return dtype == PORTA_F64 ? launch_typed<double>(x, bias, y, count, dims[1], inner, slope, scale, stream)
                            : launch_typed<float>(x, bias, y, count, dims[1], inner, slope, scale, stream);
}

}  // namespace

// This build's kernels: FusedLeakyReLU on PORTA_GPU_BACKEND ("cuda", "hip" or "gpu_emu").
PORTA_GPU_REGISTER(fused_leaky_relu) {
  porta_api = api;
  porta_kernel_def k;
  std::memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = "FusedLeakyReLU";
  k.backend_name = PORTA_GPU_BACKEND;
  k.dtypes = PORTA_DTYPE_BIT(PORTA_F32) | PORTA_DTYPE_BIT(PORTA_F64);
  k.num_inputs = 2;
  k.num_outputs = 1;
  k.fn = fused_leaky_relu_gpu;
  return api->register_kernel(&k);
}
