/* porta_test_plugin_domains (name "test_domains"), loaded by tests/op_identity_test.cpp:
 *   com.bad::LeakyRelu          beside ONNX's LeakyRelu: Y = 3 X (reference and cpu kernel agree,
 *                               so the op is "bad" only in its name); kernel named by its plain name
 *   com.stylegan2::FusedLeakyReLU(X, B) = leaky_relu(X + B over dim 1, negative_slope) * scale
 *                               reference, composite, a cpu kernel whose `supports` declines
 *                               inputs that are not rank 4, test cases, domain versions 1..2
 *   com.porta.test::Shadowed    Y = X + 1, for a built-in "Shadowed" the test adds afterwards
 *   com.porta.test::WrongKernel Y = X + 1 by its reference, X + 2 by its cpu kernel (porta test
 *                               must fail it)
 *   com.porta.test::Fails       a cpu kernel that fails without a message
 *   com.porta.test::TooMany     a composite asking Relu for two outputs
 *   com.porta.test::TwoImpls    Y = X + 1 by two cpu kernels: "small" (priority 10) declines
 *                               inputs of more than 4 elements, "generic" (priority 0) takes all
 * Uses only the function table it is given. */
#include <math.h>
#include <string.h>

#include "porta/plugin.h"

static const porta_plugin_api* api;

/* Y has X's shape and dtype. */
static porta_status same_as_x(porta_infer_context* ctx, void* user) {
  int present = 0;
  porta_dtype dt;
  int64_t dims[8];
  size_t rank = 0;
  (void)user;
  if (api->infer_input(ctx, 0, &present, &dt, dims, 8, &rank)) return PORTA_ERROR_INTERNAL;
  if (rank > 8) return api->set_error(PORTA_ERROR_SHAPE, "rank should be at most 8");
  return api->infer_set_output(ctx, 0, dt, dims, rank);
}

/* Host pointers and element count of input 0 and output 0 (cpu tensors). */
static porta_status xy(porta_kernel_context* ctx, void** x, void** y, size_t* n, size_t elem) {
  porta_tensor tx, ty;
  size_t bytes;
  if (api->kernel_input(ctx, 0, &tx) || api->kernel_output(ctx, 0, &ty)) return PORTA_ERROR_INTERNAL;
  if (api->tensor_data(tx, x) || api->tensor_data(ty, y) || api->tensor_nbytes(tx, &bytes)) return PORTA_ERROR_INTERNAL;
  *n = bytes / elem;
  return PORTA_OK;
}

#define ELEMENTWISE(fname, T, expr)                                        \
  static porta_status fname(porta_kernel_context* ctx, void* user) {       \
    T *x, *y;                                                              \
    size_t n, i;                                                           \
    (void)user;                                                            \
    if (xy(ctx, (void**)&x, (void**)&y, &n, sizeof(T))) return PORTA_ERROR_INTERNAL; \
    for (i = 0; i < n; ++i) y[i] = (expr);                                 \
    return PORTA_OK;                                                       \
  }
ELEMENTWISE(times3_ref, double, 3 * x[i])
ELEMENTWISE(times3_cpu, float, 3 * x[i])
ELEMENTWISE(plus1_ref, double, x[i] + 1)
ELEMENTWISE(plus1_cpu, float, x[i] + 1)
ELEMENTWISE(plus2_cpu, float, x[i] + 2)

static porta_status fails_cpu(porta_kernel_context* ctx, void* user) {
  (void)ctx; (void)user;
  return PORTA_ERROR_INTERNAL;
}

/* ---- FusedLeakyReLU -------------------------------------------------------------------- */

static porta_status read_slope_scale(porta_attrs a, double* slope, double* scale) {
  porta_status s = api->attrs_get_float(a, "negative_slope", slope);
  return s ? s : api->attrs_get_float(a, "scale", scale);
}

/* X: [N, C, ...], B: [C]. */
static porta_status fused_infer(porta_infer_context* ctx, void* user) {
  int present = 0;
  porta_dtype dt, bdt;
  int64_t dims[8], bdims[8];
  size_t rank = 0, brank = 0;
  (void)user;
  if (api->infer_input(ctx, 0, &present, &dt, dims, 8, &rank)) return PORTA_ERROR_INTERNAL;
  if (api->infer_input(ctx, 1, &present, &bdt, bdims, 8, &brank)) return PORTA_ERROR_INTERNAL;
  if (rank < 2 || rank > 8) return api->set_error(PORTA_ERROR_SHAPE, "[FusedLeakyReLU] X should have rank 2 to 8");
  if (brank != 1 || bdims[0] != dims[1]) return api->set_error(PORTA_ERROR_SHAPE, "[FusedLeakyReLU] B should be [C]");
  if (bdt != dt) return api->set_error(PORTA_ERROR_DTYPE, "[FusedLeakyReLU] B should have X's dtype");
  return api->infer_set_output(ctx, 0, dt, dims, rank);
}

/* Strides of X: [outer = N, C, inner = rest]. */
static void fused_geometry(porta_tensor x, size_t* n, size_t* c, size_t* inner) {
  int64_t dims[8];
  size_t rank = 0, i;
  api->tensor_rank(x, &rank);
  api->tensor_shape(x, dims, 8);
  *n = (size_t)dims[0];
  *c = (size_t)dims[1];
  *inner = 1;
  for (i = 2; i < rank; ++i) *inner *= (size_t)dims[i];
}

#define FUSED(fname, T)                                                                          \
  static porta_status fname(porta_kernel_context* ctx, void* user) {                             \
    porta_tensor tx, tb, ty;                                                                     \
    porta_attrs a;                                                                               \
    T *x, *b, *y;                                                                                \
    double slope, scale;                                                                         \
    size_t n, c, inner, i, j, k;                                                                 \
    (void)user;                                                                                  \
    if (api->kernel_input(ctx, 0, &tx) || api->kernel_input(ctx, 1, &tb) ||                      \
        api->kernel_output(ctx, 0, &ty) || api->kernel_attrs(ctx, &a))                           \
      return PORTA_ERROR_INTERNAL;                                                               \
    if (read_slope_scale(a, &slope, &scale)) return PORTA_ERROR_INTERNAL;                        \
    if (api->tensor_data(tx, (void**)&x) || api->tensor_data(tb, (void**)&b) ||                  \
        api->tensor_data(ty, (void**)&y))                                                        \
      return PORTA_ERROR_INTERNAL;                                                               \
    fused_geometry(tx, &n, &c, &inner);                                                          \
    for (i = 0; i < n; ++i)                                                                      \
      for (j = 0; j < c; ++j)                                                                    \
        for (k = 0; k < inner; ++k) {                                                            \
          size_t at = (i * c + j) * inner + k;                                                   \
          T v = x[at] + b[j];                                                                    \
          y[at] = (T)((v >= 0 ? v : (T)slope * v) * (T)scale);                                   \
        }                                                                                        \
    return PORTA_OK;                                                                             \
  }
FUSED(fused_ref, double)
FUSED(fused_cpu, float)

/* The cpu kernel takes NCHW inputs only. It must not be able to read data here. */
static int fused_supports(porta_kernel_context* ctx, void* user, char* reason, size_t capacity) {
  porta_tensor x;
  size_t rank = 0;
  void* data = NULL;
  (void)user;
  if (api->kernel_input(ctx, 0, &x) || api->tensor_rank(x, &rank)) return 0;
  if (api->tensor_data(x, &data) == PORTA_OK) {
    strncpy(reason, "BUG: supports could read the tensor's data", capacity - 1);
    return 0;
  }
  if (rank != 4) {
    strncpy(reason, "takes NCHW inputs (rank 4) only", capacity - 1);
    return 0;
  }
  return 1;
}

/* Y = (Add(X, Reshape(B, [C, 1, ...]))) through LeakyRelu(alpha = slope), times scale. */
static porta_status fused_composite(porta_builder* b, const int32_t* in, size_t num_inputs, porta_attrs attrs,
                                    int32_t* out, size_t num_outputs, void* user) {
  double slope, scale;
  porta_dtype dt;
  int64_t dims[8], shape[8];
  size_t rank = 0, i;
  porta_tensor t;
  porta_device cpu = {PORTA_DEVICE_CPU, 0};
  int32_t shape_id, scale_id, pair[2], bias, sum, act;
  porta_attrs la;
  porta_status s;
  (void)num_inputs; (void)num_outputs; (void)user;
  if ((s = read_slope_scale(attrs, &slope, &scale))) return s;
  if ((s = api->builder_value(b, in[0], &dt, dims, 8, &rank))) return s;
  shape[0] = dims[1];
  for (i = 1; i + 1 < rank; ++i) shape[i] = 1;
  {
    int64_t r = (int64_t)rank - 1;
    if ((s = api->tensor_create(cpu, PORTA_I64, &r, 1, &t))) return s;
    s = api->tensor_copy_from_host(t, shape, sizeof(int64_t) * (size_t)r);
    if (!s) s = api->builder_constant(b, t, &shape_id);
    api->tensor_free(t);
    if (s) return s;
  }
  pair[0] = in[1];
  pair[1] = shape_id;
  if ((s = api->builder_add(b, "Reshape", pair, 2, NULL, &bias, 1))) return s;
  pair[0] = in[0];
  pair[1] = bias;
  if ((s = api->builder_add(b, "Add", pair, 2, NULL, &sum, 1))) return s;
  if ((s = api->attrs_create(&la))) return s;
  s = api->attrs_set_float(la, "alpha", slope);
  if (!s) s = api->builder_add(b, "LeakyRelu", &sum, 1, la, &act, 1);
  api->attrs_free(la);
  if (s) return s;
  {
    if ((s = api->tensor_create(cpu, dt, NULL, 0, &t))) return s;
    if (dt == PORTA_F64) s = api->tensor_copy_from_host(t, &scale, sizeof scale);
    else {
      float f = (float)scale;
      s = api->tensor_copy_from_host(t, &f, sizeof f);
    }
    if (!s) s = api->builder_constant(b, t, &scale_id);
    api->tensor_free(t);
    if (s) return s;
  }
  pair[0] = act;
  pair[1] = scale_id;
  return api->builder_add(b, "Mul", pair, 2, NULL, out, 1);
}

static porta_status too_many_composite(porta_builder* b, const int32_t* in, size_t num_inputs, porta_attrs attrs,
                                       int32_t* out, size_t num_outputs, void* user) {
  int32_t two[2];
  (void)num_inputs; (void)attrs; (void)num_outputs; (void)user;
  porta_status s = api->builder_add(b, "Relu", in, 1, NULL, two, 2);
  if (s) return s;
  out[0] = two[0];
  return PORTA_OK;
}

static int small_supports(porta_kernel_context* ctx, void* user, char* reason, size_t capacity) {
  porta_tensor x;
  size_t bytes = 0;
  (void)user;
  if (api->kernel_input(ctx, 0, &x) || api->tensor_nbytes(x, &bytes)) return 0;
  if (bytes / sizeof(float) > 4) {
    strncpy(reason, "more than 4 elements", capacity - 1);
    return 0;
  }
  return 1;
}

/* ---- registration -------------------------------------------------------------------- */

static porta_status add_op_with_cases(const char* domain, const char* name, size_t num_inputs,
                                      porta_kernel_fn reference, porta_composite_fn composite, porta_infer_fn infer,
                                      const porta_op_case* cases, size_t num_cases) {
  static const char* const one[] = {"X"};
  static const char* const two[] = {"X", "B"};
  static const char* const outputs[] = {"Y"};
  porta_op_schema s;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.name = name;
  s.domain = domain;
  s.inputs = num_inputs == 2 ? two : one;
  s.num_inputs = num_inputs;
  s.outputs = outputs;
  s.num_outputs = 1;
  s.infer = infer;
  s.reference = reference;
  s.composite = composite;
  s.cases = cases;
  s.num_cases = num_cases;
  return api->register_op(&s);
}

static porta_status add_op(const char* domain, const char* name, size_t num_inputs, porta_kernel_fn reference,
                           porta_composite_fn composite, porta_infer_fn infer) {
  return add_op_with_cases(domain, name, num_inputs, reference, composite, infer, NULL, 0);
}

static porta_status add_kernel(const char* op, porta_kernel_fn fn, porta_supports_fn supports, uint32_t dtypes) {
  porta_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = op;
  k.backend = PORTA_DEVICE_CPU;
  k.dtypes = dtypes;
  k.num_inputs = -1;
  k.num_outputs = 1;
  k.fn = fn;
  k.supports = supports;
  return api->register_kernel(&k);
}

static porta_status add_fused(void) {
  static const char* const inputs[] = {"X", "B"};
  static const char* const outputs[] = {"Y"};
  static const porta_attr_def attrs[] = {{"negative_slope", PORTA_ATTR_FLOAT, 0, 0, 0.2, NULL},
                                         {"scale", PORTA_ATTR_FLOAT, 0, 0, 1.4142135623730951, NULL}};
  static const int64_t nchw[] = {2, 3, 4, 5}, nc[] = {4, 3}, bias[] = {3};
  static const porta_case_input small[] = {{nchw, 4, -1, 0, -2, 2, NULL, 0, 0}, {bias, 1, -1, 0, -1, 1, NULL, 0, 0}};
  static const porta_case_input flat[] = {{nc, 2, -1, 0, 0, 0, NULL, 0, 0}, {bias, 1, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_attr_value slope[] = {{"negative_slope", PORTA_ATTR_FLOAT, 0, 0.1, NULL, NULL, NULL, NULL, 0}};
  static const porta_op_case cases[] = {
      {"nchw", small, 2, NULL, 0, PORTA_DTYPE_BIT(PORTA_F32) | PORTA_DTYPE_BIT(PORTA_F64), 1, 1, 0},
      {"rank2_slope", flat, 2, slope, 1, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0}};
  porta_op_schema s;
  porta_status st;
  memset(&s, 0, sizeof s);
  s.struct_size = sizeof s;
  s.name = "FusedLeakyReLU";
  s.domain = "com.stylegan2";
  s.inputs = inputs;
  s.num_inputs = 2;
  s.outputs = outputs;
  s.num_outputs = 1;
  s.attrs = attrs;
  s.num_attrs = 2;
  s.infer = fused_infer;
  s.reference = fused_ref;
  s.composite = fused_composite;
  s.cases = cases;
  s.num_cases = 2;
  s.since_version = 1;
  s.until_version = 2;
  if ((st = api->register_op(&s))) return st;
  return add_kernel("FusedLeakyReLU", fused_cpu, fused_supports, PORTA_DTYPE_BIT(PORTA_F32));
}

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* table, porta_plugin_info* info);

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* table, porta_plugin_info* info) {
  static const int64_t four[] = {4};
  static const porta_case_input one_input[] = {{four, 1, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_op_case wrong_case[] = {{"four", one_input, 1, NULL, 0, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0}};
  const uint32_t f32 = PORTA_DTYPE_BIT(PORTA_F32);
  porta_status st;
  if (porta_plugin_begin(table, info, "test_domains") != PORTA_OK) return PORTA_ERROR_ABI_MISMATCH;
  api = table;
  if ((st = add_op("com.bad", "LeakyRelu", 1, times3_ref, NULL, same_as_x))) return st;
  if ((st = add_kernel("LeakyRelu", times3_cpu, NULL, f32))) return st; /* its own, not ONNX's */
  if ((st = add_fused())) return st;
  if ((st = add_op("com.porta.test", "Shadowed", 1, plus1_ref, NULL, same_as_x))) return st;
  if ((st = add_kernel("com.porta.test::Shadowed", plus1_cpu, NULL, f32))) return st;
  if ((st = add_op_with_cases("com.porta.test", "WrongKernel", 1, plus1_ref, NULL, same_as_x, wrong_case, 1)))
    return st;
  if ((st = add_kernel("WrongKernel", plus2_cpu, NULL, f32))) return st;
  if ((st = add_op("com.porta.test", "Fails", 1, plus1_ref, NULL, same_as_x))) return st;
  if ((st = add_kernel("Fails", fails_cpu, NULL, f32))) return st;
  if ((st = add_op("com.porta.test", "TooMany", 1, NULL, too_many_composite, same_as_x))) return st;
  if ((st = add_op("com.porta.test", "TwoImpls", 1, plus1_ref, NULL, same_as_x))) return st;
  {
    porta_kernel_def k;
    memset(&k, 0, sizeof k);
    k.struct_size = sizeof k;
    k.op = "TwoImpls";
    k.backend = PORTA_DEVICE_CPU;
    k.dtypes = f32;
    k.num_inputs = 1;
    k.num_outputs = 1;
    k.fn = plus1_cpu;
    k.impl_name = "generic";
    k.priority = 0;
    if ((st = api->register_kernel(&k))) return st;
    k.impl_name = "small";
    k.priority = 10;
    k.supports = small_supports;
    if ((st = api->register_kernel(&k))) return st;
  }
  return PORTA_OK;
}
