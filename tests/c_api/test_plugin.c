/* Test plugins for tests/plugin_test.cpp, one source built four ways:
 *   TEST_PLUGIN_GOOD       adds op TestNegate (domain com.porta.test) with a cpu kernel
 *   TEST_PLUGIN_ABI99      the same, built with PORTA_ABI_VERSION 99
 *   TEST_PLUGIN_ABI3       adds op TestNegateV3, built with PORTA_ABI_VERSION 3 (an older plugin
 *                          porta still loads: its table is a prefix of today's)
 *   TEST_PLUGIN_DUPLICATE  registers an op Relu in ONNX's default domain (exists in porta)
 *   TEST_PLUGIN_BADKERNEL  adds op TestBad (1 input) and a kernel taking 2 inputs
 * Uses only the function table it is given: it does not link libporta. */
#include <string.h>

#include "porta/plugin.h"

static const porta_plugin_api* g_api;

static porta_status negate_infer(porta_infer_context* ctx, void* user) {
  int present = 0;
  porta_dtype dt;
  int64_t dims[16];
  size_t rank = 0;
  (void)user;
  if (g_api->infer_input(ctx, 0, &present, &dt, dims, 16, &rank) != PORTA_OK) return PORTA_ERROR_INTERNAL;
  if (rank > 16) return g_api->set_error(PORTA_ERROR_SHAPE, "[TestNegate] rank should be at most 16");
  if (dt != PORTA_F32) return g_api->set_error(PORTA_ERROR_DTYPE, "[TestNegate] X should be f32");
  return g_api->infer_set_output(ctx, 0, dt, dims, rank);
}

static porta_status negate_cpu(porta_kernel_context* ctx, void* user) {
  porta_tensor x, y;
  float *px, *py;
  size_t bytes, i;
  (void)user;
  if (g_api->kernel_input(ctx, 0, &x) || g_api->kernel_output(ctx, 0, &y)) return PORTA_ERROR_INTERNAL;
  if (g_api->tensor_data(x, (void**)&px) || g_api->tensor_data(y, (void**)&py)) return PORTA_ERROR_INTERNAL;
  g_api->tensor_nbytes(x, &bytes);
  for (i = 0; i < bytes / 4; ++i) py[i] = -px[i];
  return PORTA_OK;
}

/* float64 reference for the CPU fallback / tests. */
static porta_status negate_reference(porta_kernel_context* ctx, void* user) {
  porta_tensor x, y;
  double *px, *py;
  size_t bytes, i;
  (void)user;
  if (g_api->kernel_input(ctx, 0, &x) || g_api->kernel_output(ctx, 0, &y)) return PORTA_ERROR_INTERNAL;
  if (g_api->tensor_data(x, (void**)&px) || g_api->tensor_data(y, (void**)&py)) return PORTA_ERROR_INTERNAL;
  g_api->tensor_nbytes(x, &bytes);
  for (i = 0; i < bytes / 8; ++i) py[i] = -px[i];
  return PORTA_OK;
}

static porta_status add_op(const char* domain, const char* name) {
  static const char* const inputs[] = {"X"};
  static const char* const outputs[] = {"Y"};
  porta_op_schema s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.name = name;
  s.domain = domain;
  s.inputs = inputs;
  s.num_inputs = 1;
  s.outputs = outputs;
  s.num_outputs = 1;
  s.infer = negate_infer;
  s.reference = negate_reference;
  return g_api->register_op(&s);
}

static porta_status add_kernel(const char* op, int32_t num_inputs) {
  porta_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = op;
  k.backend = PORTA_DEVICE_CPU;
  k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  k.num_inputs = num_inputs;
  k.num_outputs = 1;
  k.fn = negate_cpu;
  return g_api->register_kernel(&k);
}

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info);

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info) {
#if defined(TEST_PLUGIN_GOOD)
  const char* name = "test_good";
#elif defined(TEST_PLUGIN_ABI99)
  const char* name = "test_abi99";
#elif defined(TEST_PLUGIN_ABI3)
  const char* name = "test_abi3";
#elif defined(TEST_PLUGIN_DUPLICATE)
  const char* name = "test_duplicate";
#else
  const char* name = "test_badkernel";
#endif
  porta_status s;
  if (porta_plugin_begin(api, info, name) != PORTA_OK) return PORTA_ERROR_ABI_MISMATCH;
  g_api = api;
#if defined(TEST_PLUGIN_GOOD) || defined(TEST_PLUGIN_ABI99)
  if ((s = add_op("com.porta.test", "TestNegate")) != PORTA_OK) return s;
  return add_kernel("TestNegate", 1);
#elif defined(TEST_PLUGIN_ABI3)
  if ((s = add_op("com.porta.test", "TestNegateV3")) != PORTA_OK) return s;
  return add_kernel("TestNegateV3", 1);
#elif defined(TEST_PLUGIN_DUPLICATE)
  /* A plugin that ignores the refusal and carries on: porta still refuses the whole plugin. */
  (void)add_op("com.porta.test", "TestDupHelper");
  (void)add_op("", "Relu");
  return PORTA_OK;
#else
  if ((s = add_op("com.porta.test", "TestBad")) != PORTA_OK) return s;
  return add_kernel("TestBad", 2);
#endif
}
