// porta tests — a one-input, one-output test op through the C ABI, shared by the suites that
// check what kernel callbacks get (kernel_abi_test.cpp, gpu_plugin_emu_test.cpp): shape
// inference "Y is like X" and the reference Y = 2 * X over float64.
#pragma once
#include <gtest/gtest.h>

#include <cstring>

#include "porta/porta.h"

namespace porta::test {

inline porta_status infer_like_input(porta_infer_context* ctx, void*) {
  int present;
  porta_dtype dtype;
  int64_t dims[8];
  size_t rank;
  porta_status s = porta_infer_input(ctx, 0, &present, &dtype, dims, 8, &rank);
  return s ? s : porta_infer_set_output(ctx, 0, dtype, dims, rank);
}

inline porta_status reference_twice(porta_kernel_context* ctx, void*) {
  porta_tensor x, y;
  void *px, *py;
  size_t bytes;
  if (porta_kernel_input(ctx, 0, &x) || porta_kernel_output(ctx, 0, &y)) return PORTA_ERROR_INTERNAL;
  porta_tensor_data(x, &px);
  porta_tensor_data(y, &py);
  porta_tensor_nbytes(x, &bytes);
  for (size_t i = 0; i < bytes / 8; ++i) static_cast<double*>(py)[i] = static_cast<const double*>(px)[i] * 2;
  return PORTA_OK;
}

/// Registers com.porta.test::<name> (X -> Y, reference Y = 2 X); kernels are the caller's.
inline void register_twice_op(const char* name) {
  static const char* const inputs[] = {"X"};
  static const char* const outputs[] = {"Y"};
  porta_op_schema s;
  std::memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.name = name;
  s.domain = "com.porta.test";
  s.inputs = inputs;
  s.num_inputs = 1;
  s.outputs = outputs;
  s.num_outputs = 1;
  s.infer = infer_like_input;
  s.reference = reference_twice;
  EXPECT_EQ(porta_register_op(&s), PORTA_OK) << porta_last_error();
}

}  // namespace porta::test
