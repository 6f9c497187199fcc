// A plugin-style GPU kernel on the SIMT emulator (gpu_emu:0 at warp 32, gpu_emu:1 at 64),
// written as a plugin's .cu is (porta/gpu_plugin.hpp) and registered through the C ABI: it gets
// its tensors' device addresses, porta's stream and scratch, and queues two kernels on the
// stream that pass data through the scratch. An out-of-bounds write into the scratch is caught
// by the emulator and comes back through porta::gpu_plugin::launch as the op's error.
// Compiled with PORTA_GPU_EMU=1 (tests/CMakeLists.txt), only when gpu_emu is built.
#include "porta/gpu_plugin.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "porta/porta.h"
#include "porta/porta.hpp"
#include "tests/c_abi_test_ops.hpp"
#include "tests/test_util.hpp"

namespace {

const porta_plugin_api* table() {
  static const porta_plugin_api api = [] {
    porta_plugin_api a;
    std::memset(&a, 0, sizeof a);
    a.set_error = porta_set_error;
    return a;
  }();
  return &api;
}

bool write_out_of_bounds = false;

__global__ void scale_into(const float* x, float* scratch, int64_t n, bool out_of_bounds) {
  int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) scratch[i] = x[i] * 2;
  if (out_of_bounds && i == 0) scratch[-1] = 0;  // before the allocation: a guard zone
}

__global__ void copy_out(const float* scratch, float* y, int64_t n) {
  int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scratch[i];
}

porta_status scratch_scale_gpu(porta_kernel_context* ctx, void*) {
  porta_tensor x, y;
  porta_status s;
  if ((s = porta_kernel_input(ctx, 0, &x)) || (s = porta_kernel_output(ctx, 0, &y))) return s;
  void *px, *py, *stream, *scratch;
  size_t bytes;
  if ((s = porta_tensor_device_pointer(x, &px)) || (s = porta_tensor_device_pointer(y, &py)) ||
      (s = porta_kernel_stream(ctx, &stream)) || (s = porta_tensor_nbytes(x, &bytes)))
    return s;
  if (bytes == 0) return PORTA_OK;
  if ((s = porta_kernel_scratch(ctx, bytes, &scratch))) return s;
  if (reinterpret_cast<uintptr_t>(scratch) % 256)
    return porta_set_error(PORTA_ERROR_INTERNAL, "[ScratchScale] scratch is not 256-byte aligned");
  const int64_t n = static_cast<int64_t>(bytes / 4);
  const dim3 grid(static_cast<unsigned>((n + 127) / 128)), block(128);
  if ((s = porta::gpu_plugin::launch<scale_into>(table(), "scale_into", grid, block, 0, stream,
                                                 static_cast<const float*>(px), static_cast<float*>(scratch), n,
                                                 write_out_of_bounds)))
    return s;
  return porta::gpu_plugin::launch<copy_out>(table(), "copy_out", grid, block, 0, stream,
                                             static_cast<const float*>(scratch), static_cast<float*>(py), n);
}

void register_once() {
  static const bool done = [] {
    porta::test::register_twice_op("ScratchScale");
    porta_kernel_def k;
    std::memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    k.op = "com.porta.test::ScratchScale";
    k.backend_name = PORTA_GPU_BACKEND;
    k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
    k.num_inputs = 1;
    k.num_outputs = 1;
    k.fn = scratch_scale_gpu;
    EXPECT_EQ(porta_register_kernel(&k), PORTA_OK) << porta_last_error();
    return true;
  }();
  (void)done;
}

}  // namespace

TEST(GpuPluginEmu, KernelGetsAddressesStreamAndScratchAtBothWarpWidths) {
  register_once();
  for (const char* name : {"gpu_emu:0", "gpu_emu:1"}) {
    porta::Device d = porta::Device::parse(name);
    for (porta::Shape shape : {porta::Shape{1}, porta::Shape{3, 7}, porta::Shape{1000}, porta::Shape{0, 5}}) {
      porta::Tensor x = porta::test::make_input(porta::InputSpec{shape}, porta::DType::f32);
      porta::Tensor y = porta::call_op("com.porta.test::ScratchScale", {x.to(d)}).at(0);
      EXPECT_EQ(y.device(), d);
      porta::Tensor ref = porta::reference_op("com.porta.test::ScratchScale", {x}).at(0);
      porta::test::Comparison c = porta::test::compare(y.to(porta::Device::cpu()), ref, 0);
      EXPECT_TRUE(c.ok) << name << " " << porta::shape_str(shape) << ": " << c.message;
    }
    EXPECT_NE(porta::explain("com.porta.test::ScratchScale", d, porta::DType::f32).find("native"), std::string::npos);
  }
}

TEST(GpuPluginEmu, WriteOutsideScratchIsTheOpsErrorNamingTheKernel) {
  register_once();
  write_out_of_bounds = true;
  porta::Tensor x = porta::Tensor::from_values({1, 2, 3}, {3}, porta::DType::f32).to(porta::Device::parse("gpu_emu:0"));
  try {
    porta::call_op("com.porta.test::ScratchScale", {x});
    ADD_FAILURE() << "the out-of-bounds write was not reported";
  } catch (const porta::BackendError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("scale_into on gpu_emu:0"), std::string::npos) << m;
    // 12 bytes of scratch come as a 256-byte block (porta.h's alignment).
    EXPECT_NE(m.find("wrote before the start of a 256-byte allocation"), std::string::npos) << m;
  }
  write_out_of_bounds = false;
}
