/* fused_leaky_relu — StyleGAN2's FusedLeakyReLU as a porta plugin (domain com.stylegan2):
 *   Y = leaky_relu(X + bias over dim 1, negative_slope) * scale
 * X: f32 or f64, rank >= 2 (N, C, ...); bias: length C; negative_slope 0.2 and scale sqrt(2)
 * by default. One plugin carries:
 *   - the schema, shape inference, a float64 reference and test cases (this file)
 *   - the composite Mul(LeakyRelu(Add(X, Reshape(bias, [C, 1, ...])), slope), scale), which
 *     porta runs on a device without a kernel (this file)
 *   - a cpu kernel (this file), a Vulkan kernel (fused_leaky_relu.comp, f32)
 *   - the CUDA kernel of the original extension (fused_leaky_relu.cu), built by
 *     porta_add_plugin for cuda (nvcc), hip (hipcc) and gpu_emu (porta's SIMT emulator).
 * It reaches porta only through the table porta_plugin_init receives. */
#include <math.h>
#include <string.h>

#include "porta/plugin.h"
#include "porta/plugin_gpu.h"

#if PORTA_PLUGIN_WITH_VULKAN
#include "fused_leaky_relu_spv.h"
#endif

/* The GPU builds of fused_leaky_relu.cu (PORTA_GPU_REGISTER(fused_leaky_relu) there). */
PORTA_GPU_DECLARE(fused_leaky_relu)

static const porta_plugin_api* porta;

#define MAX_RANK 16

/* Shape of input 0 and the sizes the kernels index with: Y[i] uses bias[(i / inner) % channels]. */
typedef struct {
  int64_t count, channels, inner;
} geometry;

static porta_status read_geometry(porta_tensor x, geometry* g) {
  int64_t dims[MAX_RANK];
  size_t rank, i;
  porta_status s;
  if ((s = porta->tensor_rank(x, &rank))) return s;
  if (rank < 2 || rank > MAX_RANK) return porta->set_error(PORTA_ERROR_SHAPE, "[FusedLeakyReLU] X should have rank 2..16");
  if ((s = porta->tensor_shape(x, dims, MAX_RANK))) return s;
  g->channels = dims[1];
  g->inner = 1;
  for (i = 2; i < rank; ++i) g->inner *= dims[i];
  g->count = dims[0] * g->channels * g->inner;
  return PORTA_OK;
}

static porta_status read_attrs(porta_attrs attrs, double* slope, double* scale) {
  porta_status s = porta->attrs_get_float(attrs, "negative_slope", slope);
  return s ? s : porta->attrs_get_float(attrs, "scale", scale);
}

static porta_status infer(porta_infer_context* ctx, void* user) {
  int present;
  porta_dtype x_type, b_type;
  int64_t dims[MAX_RANK], bias_dims[1];
  size_t rank, bias_rank;
  porta_status s;
  (void)user;
  if ((s = porta->infer_input(ctx, 0, &present, &x_type, dims, MAX_RANK, &rank))) return s;
  if ((s = porta->infer_input(ctx, 1, &present, &b_type, bias_dims, 1, &bias_rank))) return s;
  if (x_type != PORTA_F32 && x_type != PORTA_F64)
    return porta->set_error(PORTA_ERROR_DTYPE, "[FusedLeakyReLU] X should be f32 or f64");
  if (b_type != x_type) return porta->set_error(PORTA_ERROR_DTYPE, "[FusedLeakyReLU] bias should have X's dtype");
  if (rank < 2 || rank > MAX_RANK) return porta->set_error(PORTA_ERROR_SHAPE, "[FusedLeakyReLU] X should have rank 2..16 (N, C, ...)");
  if (bias_rank != 1 || bias_dims[0] != dims[1])
    return porta->set_error(PORTA_ERROR_SHAPE, "[FusedLeakyReLU] bias should be 1-D with X's channel count (dim 1)");
  return porta->infer_set_output(ctx, 0, x_type, dims, rank);
}

/* The host loop, for the float64 reference and the cpu kernel: one (n, c) plane at a time,
 * its bias added to `inner` contiguous elements. */
#define FUSED_LEAKY_RELU_LOOP(T)                                                  \
  for (plane = 0; plane < g.count / g.inner; ++plane) {                           \
    const T* src = (const T*)x + plane * g.inner;                                 \
    T* dst = (T*)y + plane * g.inner;                                             \
    T bias = ((const T*)b)[plane % g.channels];                                   \
    for (i = 0; i < g.inner; ++i) {                                               \
      T v = src[i] + bias;                                                        \
      dst[i] = (v >= (T)0 ? v : v * (T)slope) * (T)scale;                         \
    }                                                                             \
  }

static porta_status run_host(porta_kernel_context* ctx) {
  porta_tensor tx, tb, ty;
  void *x, *b, *y;
  porta_dtype dtype;
  porta_attrs attrs;
  double slope, scale;
  geometry g;
  int64_t plane, i;
  porta_status s;
  if ((s = porta->kernel_input(ctx, 0, &tx)) || (s = porta->kernel_input(ctx, 1, &tb)) ||
      (s = porta->kernel_output(ctx, 0, &ty)))
    return s;
  if ((s = porta->tensor_data(tx, &x)) || (s = porta->tensor_data(tb, &b)) || (s = porta->tensor_data(ty, &y))) return s;
  if ((s = porta->kernel_attrs(ctx, &attrs)) || (s = read_attrs(attrs, &slope, &scale))) return s;
  if ((s = read_geometry(tx, &g)) || (s = porta->tensor_dtype(tx, &dtype))) return s;
  if (g.count == 0) return PORTA_OK;
  if (dtype == PORTA_F64) {
    FUSED_LEAKY_RELU_LOOP(double)
  } else {
    FUSED_LEAKY_RELU_LOOP(float)
  }
  return PORTA_OK;
}

/* porta calls the reference with f64 tensors on the cpu; the cpu kernel with f32 or f64. */
static porta_status reference(porta_kernel_context* ctx, void* user) { (void)user; return run_host(ctx); }
static porta_status cpu_kernel(porta_kernel_context* ctx, void* user) { (void)user; return run_host(ctx); }

#if PORTA_PLUGIN_WITH_VULKAN
static porta_status vulkan_kernel(porta_kernel_context* ctx, void* user) {
  porta_tensor tensors[3];
  int writes[3] = {0, 0, 1};
  porta_attrs attrs;
  double slope, scale;
  geometry g;
  porta_vulkan_dispatch_desc d;
  struct { uint32_t count, channels, inner; float slope, scale; } push;
  uint64_t groups;
  porta_status s;
  (void)user;
  if ((s = porta->kernel_input(ctx, 0, &tensors[0])) || (s = porta->kernel_input(ctx, 1, &tensors[1])) ||
      (s = porta->kernel_output(ctx, 0, &tensors[2])))
    return s;
  if ((s = porta->kernel_attrs(ctx, &attrs)) || (s = read_attrs(attrs, &slope, &scale))) return s;
  if ((s = read_geometry(tensors[0], &g))) return s;
  if (g.count > 0xFFFFFFFFll) return porta->set_error(PORTA_ERROR_UNSUPPORTED, "[FusedLeakyReLU] more than 2^32 elements");
  push.count = (uint32_t)g.count;
  push.channels = (uint32_t)g.channels;
  push.inner = (uint32_t)g.inner;
  push.slope = (float)slope;
  push.scale = (float)scale;
  groups = (g.count + 255) / 256;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.shader = "fused_leaky_relu";
  d.tensors = tensors;
  d.writes = writes;
  d.num_tensors = 3;
  d.push = &push;
  d.push_bytes = sizeof push;
  d.local_size = 256;
  d.groups[0] = (uint32_t)(groups < 65535u ? groups : 65535u);
  d.groups[1] = (uint32_t)((groups + 65534u) / 65535u);
  d.groups[2] = 1;
  return porta->vulkan_dispatch(ctx, &d);
}
#endif

/* A scalar constant of `dtype` holding `value`. */
static porta_status scalar(porta_builder* b, porta_dtype dtype, double value, int32_t* id) {
  porta_device cpu = {PORTA_DEVICE_CPU, 0};
  porta_tensor t;
  float f = (float)value;
  porta_status s = porta->tensor_create(cpu, dtype, NULL, 0, &t);
  if (s) return s;
  s = dtype == PORTA_F64 ? porta->tensor_copy_from_host(t, &value, sizeof value) : porta->tensor_copy_from_host(t, &f, sizeof f);
  if (s == PORTA_OK) s = porta->builder_constant(b, t, id);
  porta->tensor_free(t);
  return s;
}

static porta_status composite(porta_builder* b, const int32_t* in, size_t num_inputs, porta_attrs attrs, int32_t* out,
                              size_t num_outputs, void* user) {
  porta_dtype dtype;
  int64_t dims[MAX_RANK], bias_shape[MAX_RANK];
  size_t rank, i;
  porta_device cpu = {PORTA_DEVICE_CPU, 0};
  porta_tensor shape;
  porta_attrs leaky;
  double slope, scale;
  int32_t shape_id, pair[2], bias, shifted, activated, scale_id;
  porta_status s;
  (void)num_inputs; (void)num_outputs; (void)user;
  if ((s = read_attrs(attrs, &slope, &scale))) return s;
  if ((s = porta->builder_value(b, in[0], &dtype, dims, MAX_RANK, &rank))) return s;
  /* bias as [C, 1, ..., 1]: broadcasting then lines it up with dim 1 of X. */
  bias_shape[0] = dims[1];
  for (i = 1; i + 1 < rank; ++i) bias_shape[i] = 1;
  {
    int64_t n = (int64_t)(rank - 1);
    if ((s = porta->tensor_create(cpu, PORTA_I64, &n, 1, &shape))) return s;
  }
  s = porta->tensor_copy_from_host(shape, bias_shape, (rank - 1) * sizeof(int64_t));
  if (s == PORTA_OK) s = porta->builder_constant(b, shape, &shape_id);
  porta->tensor_free(shape);
  if (s) return s;
  pair[0] = in[1];
  pair[1] = shape_id;
  if ((s = porta->builder_add(b, "Reshape", pair, 2, NULL, &bias, 1))) return s;
  pair[0] = in[0];
  pair[1] = bias;
  if ((s = porta->builder_add(b, "Add", pair, 2, NULL, &shifted, 1))) return s;
  if ((s = porta->attrs_create(&leaky))) return s;
  s = porta->attrs_set_float(leaky, "alpha", slope);
  if (s == PORTA_OK) s = porta->builder_add(b, "LeakyRelu", &shifted, 1, leaky, &activated, 1);
  porta->attrs_free(leaky);
  if (s || (s = scalar(b, dtype, scale, &scale_id))) return s;
  pair[0] = activated;
  pair[1] = scale_id;
  return porta->builder_add(b, "Mul", pair, 2, NULL, out, 1);
}

static porta_status add_kernel(int32_t backend, uint32_t dtypes, porta_kernel_fn fn) {
  porta_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = "FusedLeakyReLU";
  k.backend = backend;
  k.dtypes = dtypes;
  k.num_inputs = 2;
  k.num_outputs = 1;
  k.fn = fn;
  return porta->register_kernel(&k);
}

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info);

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info) {
  static const char* const inputs[] = {"X", "bias"};
  static const char* const outputs[] = {"Y"};
  static const porta_attr_def attrs[] = {{"negative_slope", PORTA_ATTR_FLOAT, 0, 0, 0.2, NULL},
                                         {"scale", PORTA_ATTR_FLOAT, 0, 0, 1.4142135623730951, NULL}};
  /* StyleGAN2 feature maps, odd sizes, rank 2 (a linear layer's output), an empty batch, a
   * benchmark size; other attribute values. */
  static const int64_t map[] = {2, 8, 9, 7}, map_c[] = {8}, flat[] = {5, 33}, flat_c[] = {33};
  static const int64_t empty[] = {0, 3, 4}, empty_c[] = {3}, big[] = {8, 512, 32, 32}, big_c[] = {512};
  static const porta_case_input map_in[] = {{map, 4, -1, 0, -3, 3, NULL, 0, 0}, {map_c, 1, -1, 0, -1, 1, NULL, 0, 0}};
  static const porta_case_input flat_in[] = {{flat, 2, -1, 0, -3, 3, NULL, 0, 0}, {flat_c, 1, -1, 0, -1, 1, NULL, 0, 0}};
  static const porta_case_input empty_in[] = {{empty, 3, -1, 0, 0, 0, NULL, 0, 0}, {empty_c, 1, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_case_input big_in[] = {{big, 4, -1, 0, 0, 0, NULL, 0, 0}, {big_c, 1, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_attr_value other[] = {{"negative_slope", PORTA_ATTR_FLOAT, 0, 0.01, NULL, NULL, NULL, NULL, 0},
                                           {"scale", PORTA_ATTR_FLOAT, 0, 0.5, NULL, NULL, NULL, NULL, 0}};
  const uint32_t floats = PORTA_DTYPE_BIT(PORTA_F32) | PORTA_DTYPE_BIT(PORTA_F64);
  static porta_op_case cases[5];
  porta_op_case c0 = {"feature_map", map_in, 2, NULL, 0, 0, 1, 0, 0};
  porta_op_case c1 = {"linear", flat_in, 2, NULL, 0, 0, 1, 0, 0};
  porta_op_case c2 = {"empty", empty_in, 2, NULL, 0, 0, 1, 0, 0};
  porta_op_case c3 = {"slope0.01_scale0.5", map_in, 2, other, 2, 0, 1, 0, 0};
  porta_op_case c4 = {"8x512x32x32", big_in, 2, NULL, 0, 0, 1, 1, 0};
  porta_op_schema schema;
  porta_status s;
  if (porta_plugin_begin(api, info, "fused_leaky_relu") != PORTA_OK) return PORTA_ERROR_ABI_MISMATCH;
  porta = api;
  cases[0] = c0; cases[1] = c1; cases[2] = c2; cases[3] = c3; cases[4] = c4;
  cases[0].dtypes = cases[1].dtypes = cases[2].dtypes = cases[3].dtypes = floats;
  cases[4].dtypes = PORTA_DTYPE_BIT(PORTA_F32);

  memset(&schema, 0, sizeof schema);
  schema.struct_size = sizeof schema;
  schema.name = "FusedLeakyReLU";
  schema.domain = "com.stylegan2";
  schema.inputs = inputs;
  schema.num_inputs = 2;
  schema.outputs = outputs;
  schema.num_outputs = 1;
  schema.attrs = attrs;
  schema.num_attrs = 2;
  schema.infer = infer;
  schema.reference = reference;
  schema.composite = composite;
  schema.cases = cases;
  schema.num_cases = 5;
  if ((s = api->register_op(&schema))) return s;
  if ((s = add_kernel(PORTA_DEVICE_CPU, floats, cpu_kernel))) return s;
#if PORTA_PLUGIN_WITH_VULKAN
  /* A porta built without Vulkan answers BACKEND_UNAVAILABLE: keep the other kernels. */
  s = api->vulkan_register_shader("fused_leaky_relu", fused_leaky_relu_spv, sizeof fused_leaky_relu_spv);
  if (s == PORTA_OK) s = add_kernel(PORTA_DEVICE_VULKAN, PORTA_DTYPE_BIT(PORTA_F32), vulkan_kernel);
  else if (s == PORTA_ERROR_BACKEND_UNAVAILABLE) s = PORTA_OK;
  if (s) return s;
#endif
  /* The .cu's kernels for each GPU build porta_add_plugin made (cuda, hip, gpu_emu). */
  return porta_gpu_register_fused_leaky_relu(api);
}
