/* example_swish — a porta plugin adding ScaledSwish (domain com.example):
 *   Y = X * sigmoid(alpha * X),  X f32 of any shape, alpha float (default 1.0).
 * Kernels: cpu, and vulkan when built with EXAMPLE_SWISH_VULKAN (swish.comp). Other backends
 * (cuda, hip) run the composite Mul(X, Sigmoid(Mul(X, alpha))) that the schema declares.
 * Test cases: `porta test --plugin libexample_swish.so` runs them on every device against the
 * composite (run through porta's references), `porta bench --op com.example::ScaledSwish`
 * times them.
 * Everything goes through the function table porta passes to porta_plugin_init. */
#include <math.h>
#include <string.h>

#include "porta/plugin.h"

#ifdef EXAMPLE_SWISH_VULKAN
#include "swish_spv.h"
#endif

static const porta_plugin_api* porta;

static porta_status read_alpha(porta_attrs attrs, double* alpha) {
  return porta->attrs_get_float(attrs, "alpha", alpha);
}

static porta_status swish_infer(porta_infer_context* ctx, void* user) {
  int present = 0;
  porta_dtype dtype;
  int64_t dims[32];
  size_t rank = 0;
  (void)user;
  porta_status s = porta->infer_input(ctx, 0, &present, &dtype, dims, 32, &rank);
  if (s != PORTA_OK) return s;
  if (dtype != PORTA_F32) return porta->set_error(PORTA_ERROR_DTYPE, "[ScaledSwish] X should be f32");
  if (rank > 32) return porta->set_error(PORTA_ERROR_SHAPE, "[ScaledSwish] X should have rank <= 32");
  return porta->infer_set_output(ctx, 0, dtype, dims, rank);
}

/* The element count and host pointers of input 0 and output 0 (cpu only). */
static porta_status cpu_buffers(porta_kernel_context* ctx, void** x, void** y, size_t* bytes) {
  porta_tensor tx, ty;
  porta_status s;
  if ((s = porta->kernel_input(ctx, 0, &tx)) || (s = porta->kernel_output(ctx, 0, &ty))) return s;
  if ((s = porta->tensor_data(tx, x)) || (s = porta->tensor_data(ty, y))) return s;
  return porta->tensor_nbytes(tx, bytes);
}

static porta_status swish_cpu(porta_kernel_context* ctx, void* user) {
  float *x, *y;
  size_t bytes, i;
  double alpha;
  porta_attrs attrs;
  porta_status s;
  (void)user;
  if ((s = cpu_buffers(ctx, (void**)&x, (void**)&y, &bytes))) return s;
  if ((s = porta->kernel_attrs(ctx, &attrs)) || (s = read_alpha(attrs, &alpha))) return s;
  for (i = 0; i < bytes / sizeof(float); ++i) y[i] = x[i] / (1.0f + expf(-(float)alpha * x[i]));
  return PORTA_OK;
}

#ifdef EXAMPLE_SWISH_VULKAN
static porta_status swish_vulkan(porta_kernel_context* ctx, void* user) {
  porta_tensor tensors[2];
  int writes[2] = {0, 1};
  size_t bytes;
  double alpha;
  porta_attrs attrs;
  porta_status s;
  struct { uint32_t count; float alpha; } push;
  porta_vulkan_dispatch_desc d;
  uint64_t groups;
  (void)user;
  if ((s = porta->kernel_input(ctx, 0, &tensors[0])) || (s = porta->kernel_output(ctx, 0, &tensors[1]))) return s;
  if ((s = porta->tensor_nbytes(tensors[0], &bytes))) return s;
  if ((s = porta->kernel_attrs(ctx, &attrs)) || (s = read_alpha(attrs, &alpha))) return s;
  if (bytes / 4 > 0xFFFFFFFFu) return porta->set_error(PORTA_ERROR_UNSUPPORTED, "[ScaledSwish] more than 2^32 elements");
  push.count = (uint32_t)(bytes / 4);
  push.alpha = (float)alpha;
  groups = (push.count + 255u) / 256u;
  memset(&d, 0, sizeof d);
  d.struct_size = sizeof d;
  d.shader = "example_swish";
  d.tensors = tensors;
  d.writes = writes;
  d.num_tensors = 2;
  d.push = &push;
  d.push_bytes = sizeof push;
  d.local_size = 256;
  d.groups[0] = (uint32_t)(groups < 65535u ? groups : 65535u);
  d.groups[1] = (uint32_t)((groups + 65534u) / 65535u);
  d.groups[2] = 1;
  return porta->vulkan_dispatch(ctx, &d);
}
#endif

static porta_status swish_composite(porta_builder* b, const int32_t* in, size_t num_inputs, porta_attrs attrs,
                                    int32_t* out, size_t num_outputs, void* user) {
  double alpha;
  float alpha_f;
  porta_tensor scalar;
  porta_device cpu = {PORTA_DEVICE_CPU, 0};
  int32_t alpha_id, pair[2], scaled, gate;
  porta_status s;
  (void)num_inputs; (void)num_outputs; (void)user;
  if ((s = read_alpha(attrs, &alpha))) return s;
  alpha_f = (float)alpha;
  if ((s = porta->tensor_create(cpu, PORTA_F32, NULL, 0, &scalar))) return s;
  s = porta->tensor_copy_from_host(scalar, &alpha_f, sizeof alpha_f);
  if (s == PORTA_OK) s = porta->builder_constant(b, scalar, &alpha_id);
  porta->tensor_free(scalar);
  if (s) return s;
  pair[0] = in[0];
  pair[1] = alpha_id;
  if ((s = porta->builder_add(b, "Mul", pair, 2, NULL, &scaled, 1))) return s;
  if ((s = porta->builder_add(b, "Sigmoid", &scaled, 1, NULL, &gate, 1))) return s;
  pair[1] = gate;
  return porta->builder_add(b, "Mul", pair, 2, NULL, out, 1);
}

static porta_status add_kernel(int32_t backend, porta_kernel_fn fn) {
  porta_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = "ScaledSwish";
  k.backend = backend;
  k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  k.num_inputs = 1;
  k.num_outputs = 1;
  k.fn = fn;
  return porta->register_kernel(&k);
}

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info);

PORTA_PLUGIN_EXPORT porta_status porta_plugin_init(const porta_plugin_api* api, porta_plugin_info* info) {
  static const char* const inputs[] = {"X"};
  static const char* const outputs[] = {"Y"};
  static const porta_attr_def attrs[] = {{"alpha", PORTA_ATTR_FLOAT, 0, 0, 1.0, NULL}};
  /* Odd sizes, an empty tensor, a scalar, another alpha, and a benchmark size. */
  static const int64_t odd[] = {3, 7}, empty[] = {0, 4}, big[] = {1024, 1024};
  static const porta_case_input odd_x[] = {{odd, 2, -1, 0, -6, 6, NULL, 0, 0}};
  static const porta_case_input empty_x[] = {{empty, 2, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_case_input scalar_x[] = {{NULL, 0, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_case_input big_x[] = {{big, 2, -1, 0, 0, 0, NULL, 0, 0}};
  static const porta_attr_value alpha_half[] = {{"alpha", PORTA_ATTR_FLOAT, 0, 0.5, NULL, NULL, NULL, NULL, 0}};
  static const porta_op_case cases[] = {
      {"odd", odd_x, 1, NULL, 0, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0},
      {"empty", empty_x, 1, NULL, 0, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0},
      {"scalar", scalar_x, 1, NULL, 0, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0},
      {"alpha0.5", odd_x, 1, alpha_half, 1, PORTA_DTYPE_BIT(PORTA_F32), 1, 0, 0},
      {"1024x1024", big_x, 1, NULL, 0, PORTA_DTYPE_BIT(PORTA_F32), 1, 1, 0}};
  porta_op_schema schema;
  porta_status s;
  if (porta_plugin_begin(api, info, "example_swish") != PORTA_OK) return PORTA_ERROR_ABI_MISMATCH;
  porta = api;

  memset(&schema, 0, sizeof schema);
  schema.struct_size = sizeof schema;
  schema.name = "ScaledSwish";
  schema.domain = "com.example";
  schema.inputs = inputs;
  schema.num_inputs = 1;
  schema.outputs = outputs;
  schema.num_outputs = 1;
  schema.attrs = attrs;
  schema.num_attrs = 1;
  schema.infer = swish_infer;
  schema.composite = swish_composite;
  schema.cases = cases;
  schema.num_cases = sizeof cases / sizeof cases[0];
  if ((s = api->register_op(&schema))) return s;
  if ((s = add_kernel(PORTA_DEVICE_CPU, swish_cpu))) return s;
#ifdef EXAMPLE_SWISH_VULKAN
  /* A porta built without Vulkan answers BACKEND_UNAVAILABLE: keep the CPU kernel only. */
  s = api->vulkan_register_shader("example_swish", swish_spv, sizeof swish_spv);
  if (s == PORTA_OK) s = add_kernel(PORTA_DEVICE_VULKAN, swish_vulkan);
  else if (s == PORTA_ERROR_BACKEND_UNAVAILABLE) s = PORTA_OK;
  if (s) return s;
#endif
  return PORTA_OK;
}
