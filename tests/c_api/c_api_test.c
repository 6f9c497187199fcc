/* End-to-end test of porta's C ABI, compiled as C (C11).
 * Usage: c_api_test MODELS_DIR   (the repository's models/ folder, for the ONNX model test)
 * Exits 0 when every check passes; prints each failed check with porta's last message. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "porta/porta.h"

static int g_failures = 0;
static int g_checks = 0;

#define CHECK(cond)                                                                   \
  do {                                                                                \
    ++g_checks;                                                                       \
    if (!(cond)) {                                                                    \
      ++g_failures;                                                                   \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, porta_last_error());                                             \
    }                                                                                 \
  } while (0)
#define CHECK_OK(call) CHECK((call) == PORTA_OK)
/* The call fails with `status` and a message that contains `text`. */
#define CHECK_FAILS(call, status, text)                                               \
  do {                                                                                \
    porta_status s_ = (call);                                                         \
    CHECK(s_ == (status));                                                            \
    CHECK(strstr(porta_last_error(), (text)) != NULL);                                \
  } while (0)

static const porta_device kCpu = {PORTA_DEVICE_CPU, 0};

/* Uniform random floats in [-2, 2) from a fixed-seed generator (no libc rand state shared). */
static unsigned g_seed = 12345u;
static float frand(void) {
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)((g_seed >> 8) & 0xFFFF) / 65536.0f * 4.0f - 2.0f;
}

static void test_version_and_devices(void) {
  size_t n = 0, i;
  porta_device devices[16];
  porta_device parsed;
  int available = 0;
  char detail[256];
  CHECK(porta_abi_version() == PORTA_ABI_VERSION);
  CHECK(porta_version() != NULL && strlen(porta_version()) > 0);
  CHECK_OK(porta_device_list(NULL, 0, &n));
  CHECK(n >= 1 && n <= 16);
  CHECK_OK(porta_device_list(devices, 16, &n));
  CHECK(devices[0].type == PORTA_DEVICE_CPU);
  for (i = 0; i < n; ++i) CHECK_OK(porta_device_available(devices[i], &available, detail, sizeof detail));
  CHECK_OK(porta_device_available(kCpu, &available, detail, sizeof detail));
  CHECK(available == 1);
  CHECK_FAILS(porta_device_list(devices, 0, &n), PORTA_ERROR_INVALID_ARGUMENT, "capacity");
  CHECK_FAILS(porta_device_list(devices, 16, NULL), PORTA_ERROR_INVALID_ARGUMENT, "count");
  CHECK_OK(porta_device_parse("cpu", &parsed));
  CHECK(parsed.type == PORTA_DEVICE_CPU && parsed.index == 0);
  CHECK_FAILS(porta_device_parse("tpu:3", &parsed), PORTA_ERROR_INVALID_ARGUMENT, "tpu");
  {
    porta_device bogus = {42, 0};
    CHECK_FAILS(porta_device_available(bogus, &available, NULL, 0), PORTA_ERROR_INVALID_ARGUMENT,
                "porta_device_type");
  }
  {
    /* Device kinds by name: the built-ins keep their enum ids; unknown names list the known. */
    int32_t kind = -1;
    const char* name = NULL;
    CHECK_OK(porta_device_type_find("vulkan", &kind));
    CHECK(kind == PORTA_DEVICE_VULKAN);
    CHECK_OK(porta_device_type_name(PORTA_DEVICE_HIP, &name));
    CHECK(name != NULL && strcmp(name, "hip") == 0);
    CHECK_FAILS(porta_device_type_find("tpu", &kind), PORTA_ERROR_INVALID_ARGUMENT, "known kinds: cpu");
    CHECK_FAILS(porta_device_type_name(42, &name), PORTA_ERROR_INVALID_ARGUMENT, "42");
  }
}

static void test_tensors(void) {
  int64_t shape[2] = {3, 5}, dims[4];
  float host[15], back[15];
  size_t rank = 0, bytes = 0, i;
  porta_dtype dt;
  porta_device dev;
  porta_tensor t = NULL, w = NULL;
  porta_model not_a_tensor = NULL;
  void* data = NULL;
  for (i = 0; i < 15; ++i) host[i] = frand();

  CHECK_OK(porta_tensor_create(kCpu, PORTA_F32, shape, 2, &t));
  CHECK_OK(porta_tensor_copy_from_host(t, host, sizeof host));
  memset(back, 0, sizeof back);
  CHECK_OK(porta_tensor_copy_to_host(t, back, sizeof back));
  CHECK(memcmp(host, back, sizeof host) == 0);
  CHECK_OK(porta_tensor_rank(t, &rank));
  CHECK(rank == 2);
  CHECK_OK(porta_tensor_shape(t, dims, 4));
  CHECK(dims[0] == 3 && dims[1] == 5);
  CHECK_OK(porta_tensor_dtype(t, &dt));
  CHECK(dt == PORTA_F32);
  CHECK_OK(porta_tensor_device(t, &dev));
  CHECK(dev.type == PORTA_DEVICE_CPU);
  CHECK_OK(porta_tensor_nbytes(t, &bytes));
  CHECK(bytes == sizeof host);

  /* Wrapping shares the caller's memory: writes through porta are seen in `host`. */
  CHECK_OK(porta_tensor_wrap_host(host, sizeof host, PORTA_F32, shape, 2, &w));
  CHECK_OK(porta_tensor_data(w, &data));
  CHECK(data == (void*)host);
  /* A cpu tensor's device pointer is its host pointer. */
  {
    void* device_data = NULL;
    CHECK_OK(porta_tensor_device_pointer(w, &device_data));
    CHECK(device_data == (void*)host);
    CHECK_FAILS(porta_tensor_device_pointer(NULL, &device_data), PORTA_ERROR_INVALID_HANDLE, "NULL");
  }
  /* The kernel-only calls refuse a context that is not a running callback's. */
  {
    void* p = NULL;
    CHECK_FAILS(porta_kernel_stream(NULL, &p), PORTA_ERROR_INVALID_HANDLE, "ctx should not be NULL");
    CHECK_FAILS(porta_kernel_scratch((porta_kernel_context*)(void*)host, 16, &p), PORTA_ERROR_INVALID_HANDLE,
                "not the context of a callback running on this thread");
  }
  CHECK_OK(porta_tensor_copy_from_host(w, back, sizeof back));

  /* Sizes: wrong byte counts, too small capacity, negative dims, bad dtype. */
  CHECK_FAILS(porta_tensor_copy_to_host(t, back, sizeof back - 4), PORTA_ERROR_INVALID_ARGUMENT, "byte count should be 60");
  CHECK_FAILS(porta_tensor_copy_from_host(t, back, 64), PORTA_ERROR_INVALID_ARGUMENT, "got 64");
  CHECK_FAILS(porta_tensor_shape(t, dims, 1), PORTA_ERROR_INVALID_ARGUMENT, "capacity");
  CHECK_FAILS(porta_tensor_wrap_host(host, 16, PORTA_F32, shape, 2, &w), PORTA_ERROR_INVALID_ARGUMENT, "byte count");
  {
    int64_t negative[2] = {3, -1};
    porta_tensor never = NULL;
    CHECK_FAILS(porta_tensor_create(kCpu, PORTA_F32, negative, 2, &never), PORTA_ERROR_INVALID_ARGUMENT, ">= 0");
    CHECK_FAILS(porta_tensor_create(kCpu, (porta_dtype)77, shape, 2, &never), PORTA_ERROR_INVALID_ARGUMENT, "dtype");
    CHECK_FAILS(porta_tensor_create(kCpu, PORTA_F32, NULL, 2, &never), PORTA_ERROR_INVALID_ARGUMENT, "NULL");
    CHECK(never == NULL);
  }

  /* NULL, wrong kind, stale handles. */
  CHECK_FAILS(porta_tensor_rank(NULL, &rank), PORTA_ERROR_INVALID_HANDLE, "NULL");
  CHECK_FAILS(porta_tensor_rank(t, NULL), PORTA_ERROR_INVALID_ARGUMENT, "rank should not be NULL");
  {
    porta_attrs attrs = NULL;
    CHECK_OK(porta_attrs_create(&attrs));
    CHECK_FAILS(porta_tensor_rank((porta_tensor)(void*)attrs, &rank), PORTA_ERROR_INVALID_HANDLE, "attributes handle");
    CHECK_OK(porta_attrs_free(attrs));
    CHECK_FAILS(porta_attrs_free(attrs), PORTA_ERROR_INVALID_HANDLE, "not live");
  }
  {
    int on_stack = 0;
    CHECK_FAILS(porta_tensor_rank((porta_tensor)(void*)&on_stack, &rank), PORTA_ERROR_INVALID_HANDLE, "not live");
  }
  CHECK_OK(porta_tensor_free(w));
  CHECK_FAILS(porta_tensor_copy_to_host(w, back, sizeof back), PORTA_ERROR_INVALID_HANDLE, "not live");
  CHECK_FAILS(porta_tensor_free(w), PORTA_ERROR_INVALID_HANDLE, "not live");
  CHECK_FAILS(porta_model_free((porta_model)(void*)t), PORTA_ERROR_INVALID_HANDLE, "tensor handle");
  CHECK_OK(porta_tensor_free(NULL));
  (void)not_a_tensor;
  CHECK_OK(porta_tensor_free(t));
}

static void test_ops(void) {
  int64_t shape[2] = {4, 7}, row[1] = {7};
  float a[28], b[7], y[28], soft[28];
  porta_tensor ta, tb, inputs[2], out = NULL, outs[2];
  porta_attrs attrs;
  size_t i, j;
  for (i = 0; i < 28; ++i) a[i] = frand();
  for (i = 0; i < 7; ++i) b[i] = frand();
  CHECK_OK(porta_tensor_wrap_host(a, sizeof a, PORTA_F32, shape, 2, &ta));
  CHECK_OK(porta_tensor_wrap_host(b, sizeof b, PORTA_F32, row, 1, &tb));
  inputs[0] = ta;
  inputs[1] = tb;

  /* Add with broadcasting. */
  CHECK_OK(porta_op_call("Add", inputs, 2, NULL, &out, 1));
  CHECK_OK(porta_tensor_copy_to_host(out, y, sizeof y));
  for (i = 0; i < 4; ++i)
    for (j = 0; j < 7; ++j) CHECK(y[i * 7 + j] == a[i * 7 + j] + b[j]);
  CHECK_OK(porta_tensor_free(out));

  /* Softmax over axis 0, set through an attribute builder. */
  CHECK_OK(porta_attrs_create(&attrs));
  CHECK_OK(porta_attrs_set_int(attrs, "axis", 0));
  CHECK_OK(porta_op_call("Softmax", inputs, 1, attrs, &out, 1));
  CHECK_OK(porta_tensor_copy_to_host(out, soft, sizeof soft));
  for (j = 0; j < 7; ++j) {
    double m = -1e30, sum = 0;
    for (i = 0; i < 4; ++i) m = a[i * 7 + j] > m ? a[i * 7 + j] : m;
    for (i = 0; i < 4; ++i) sum += exp(a[i * 7 + j] - m);
    for (i = 0; i < 4; ++i) CHECK(fabs(soft[i * 7 + j] - exp(a[i * 7 + j] - m) / sum) < 1e-5);
  }
  CHECK_OK(porta_tensor_free(out));

  /* Errors come back with porta's messages, and outputs are left alone. */
  out = NULL;
  CHECK_FAILS(porta_op_call("NoSuchOp", inputs, 2, NULL, &out, 1), PORTA_ERROR_UNSUPPORTED, "NoSuchOp");
  {
    porta_tensor same[2];
    same[0] = ta;
    same[1] = ta; /* 4x7 @ 4x7: inner dimensions differ */
    CHECK_FAILS(porta_op_call("MatMul", same, 2, NULL, &out, 1), PORTA_ERROR_SHAPE, "[MatMul]");
  }
  CHECK_FAILS(porta_op_call("Add", inputs, 2, NULL, outs, 2), PORTA_ERROR_INVALID_ARGUMENT, "num_outputs");
  CHECK_OK(porta_attrs_set_string(attrs, "axis", "zero"));
  CHECK(porta_op_call("Softmax", inputs, 1, attrs, &out, 1) != PORTA_OK);
  CHECK(strstr(porta_last_error(), "axis") != NULL);
  CHECK_FAILS(porta_op_call("Add", NULL, 2, NULL, &out, 1), PORTA_ERROR_INVALID_ARGUMENT, "inputs");
  CHECK_FAILS(porta_op_call(NULL, inputs, 2, NULL, &out, 1), PORTA_ERROR_INVALID_ARGUMENT, "op");
  CHECK(out == NULL);
  CHECK_OK(porta_attrs_free(attrs));
  CHECK_FAILS(porta_op_call("Softmax", inputs, 1, attrs, &out, 1), PORTA_ERROR_INVALID_HANDLE, "attrs");
  CHECK_OK(porta_tensor_free(tb));
  CHECK_FAILS(porta_op_call("Add", inputs, 2, NULL, &out, 1), PORTA_ERROR_INVALID_HANDLE, "not live");
  CHECK_OK(porta_tensor_free(ta));
}

/* Reads a little-endian f32 .npy (version 1 header) into a malloc'ed buffer. */
static float* read_npy_f32(const char* path, size_t* count) {
  FILE* f = fopen(path, "rb");
  unsigned char head[10];
  long size;
  size_t header;
  float* data;
  if (!f) return NULL;
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) { fclose(f); return NULL; }
  header = (size_t)head[8] | ((size_t)head[9] << 8);
  fseek(f, 0, SEEK_END);
  size = ftell(f);
  *count = ((size_t)size - 10 - header) / 4;
  data = (float*)malloc(*count * 4);
  fseek(f, (long)(10 + header), SEEK_SET);
  if (fread(data, 4, *count, f) != *count) { free(data); data = NULL; }
  fclose(f);
  return data;
}

/* The mlp example's input (4x64) and PyTorch's output (4x16) from the models folder; 0 (after a
 * failed check) when either is missing or not that size. */
static int read_mlp_io(const char* models_dir, float** x, float** expected) {
  char path[1024];
  size_t nx = 0, ny = 0;
  snprintf(path, sizeof path, "%s/mlp/input_0.npy", models_dir);
  *x = read_npy_f32(path, &nx);
  snprintf(path, sizeof path, "%s/mlp/output_0.npy", models_dir);
  *expected = read_npy_f32(path, &ny);
  CHECK(*x && *expected && nx == 256 && ny == 64);
  if (*x && *expected && nx == 256 && ny == 64) return 1;
  free(*x);
  free(*expected);
  return 0;
}

static void test_model(const char* models_dir) {
  char path[1024];
  porta_model model = NULL;
  porta_session session = NULL;
  porta_tensor x = NULL, y = NULL;
  const char* in_name = NULL;
  const char* out_name = NULL;
  const char* wrong_name = "nope";
  size_t n_in = 0, n_out = 0, i;
  int64_t xshape[2] = {4, 64};
  float *xv, *expected, got[64];
  double worst = 0;

  snprintf(path, sizeof path, "%s/mlp/model.onnx", models_dir);
  CHECK_OK(porta_model_load(path, &model));
  if (!model) return;
  CHECK_OK(porta_model_num_inputs(model, &n_in));
  CHECK_OK(porta_model_num_outputs(model, &n_out));
  CHECK(n_in == 1 && n_out == 1);
  CHECK_OK(porta_model_input_name(model, 0, &in_name));
  CHECK_OK(porta_model_output_name(model, 0, &out_name));
  CHECK(in_name && strcmp(in_name, "x") == 0);
  CHECK_FAILS(porta_model_input_name(model, 1, &in_name), PORTA_ERROR_INVALID_ARGUMENT, "below 1");
  CHECK_OK(porta_session_create(model, kCpu, 0, &session));
  CHECK_OK(porta_model_free(model)); /* the session keeps what it needs */

  if (!read_mlp_io(models_dir, &xv, &expected)) return;
  CHECK_OK(porta_tensor_wrap_host(xv, 256 * 4, PORTA_F32, xshape, 2, &x));
  in_name = "x";
  CHECK_OK(porta_session_run(session, &in_name, &x, 1, NULL, &y, 1));
  CHECK_OK(porta_tensor_copy_to_host(y, got, sizeof got));
  for (i = 0; i < 64; ++i) {
    double d = fabs(got[i] - expected[i]) / (1.0 + fabs(expected[i]));
    worst = d > worst ? d : worst;
  }
  CHECK(worst < 1e-4);
  CHECK_OK(porta_tensor_free(y));
  CHECK_OK(porta_session_run(session, &in_name, &x, 1, &out_name, &y, 1));
  CHECK_OK(porta_tensor_free(y));

  y = NULL;
  CHECK_FAILS(porta_session_run(session, &in_name, &x, 1, &wrong_name, &y, 1), PORTA_ERROR_INVALID_ARGUMENT, "no output 'nope'");
  CHECK_FAILS(porta_session_run(session, &in_name, &x, 1, NULL, &y, 2), PORTA_ERROR_INVALID_ARGUMENT, "num_outputs");
  CHECK(porta_session_run(session, &wrong_name, &x, 1, NULL, &y, 1) != PORTA_OK);
  CHECK(strstr(porta_last_error(), "nope") != NULL || strstr(porta_last_error(), "'x'") != NULL);
  CHECK(y == NULL);
  CHECK_FAILS(porta_session_run((porta_session)(void*)x, &in_name, &x, 1, NULL, &y, 1), PORTA_ERROR_INVALID_HANDLE, "tensor handle");
  CHECK(porta_model_load("/no/such/model.onnx", &model) != PORTA_OK);
  CHECK(strstr(porta_last_error(), "/no/such/model.onnx") != NULL);
  CHECK(porta_model_load_bytes("garbage", 7, &model) != PORTA_OK);
  CHECK_OK(porta_session_free(session));
  CHECK_FAILS(porta_session_free(session), PORTA_ERROR_INVALID_HANDLE, "not live");
  CHECK_OK(porta_tensor_free(x));
  free(xv);
  free(expected);
}

/* A session with a compute precision: the mlp in bf16 stays near the f32 reference output (its
 * MatMuls in bf16 with f32 accumulation, outputs still f32); bad options are refused. */
static void test_session_precision(const char* models_dir) {
  char path[1024];
  porta_model model = NULL;
  porta_session session = NULL;
  porta_tensor x = NULL, y = NULL;
  const char* in_name = "x";
  porta_session_options o;
  size_t i;
  int64_t xshape[2] = {4, 64};
  float *xv, *expected, got[64];
  double diff2 = 0, ref2 = 0, rel;
  porta_dtype dt = PORTA_F32;

  snprintf(path, sizeof path, "%s/mlp/model.onnx", models_dir);
  CHECK_OK(porta_model_load(path, &model));
  if (!model) return;
  if (!read_mlp_io(models_dir, &xv, &expected)) return;

  memset(&o, 0, sizeof o);
  o.size = sizeof o;
  o.precision = "bf16";
  CHECK_OK(porta_session_create_with(model, kCpu, &o, &session));
  CHECK_OK(porta_tensor_wrap_host(xv, 256 * 4, PORTA_F32, xshape, 2, &x));
  CHECK_OK(porta_session_run(session, &in_name, &x, 1, NULL, &y, 1));
  CHECK_OK(porta_tensor_dtype(y, &dt));
  CHECK(dt == PORTA_F32); /* outputs keep the dtype the model exports */
  CHECK_OK(porta_tensor_copy_to_host(y, got, sizeof got));
  for (i = 0; i < 64; ++i) {
    diff2 += (got[i] - expected[i]) * (double)(got[i] - expected[i]);
    ref2 += expected[i] * (double)expected[i];
  }
  rel = sqrt(diff2 / ref2);
  /* bf16 keeps 8 significant bits: a few 2^-9 per product, not exact, not far off either */
  CHECK(rel < 3e-2);
  CHECK(rel > 0);
  CHECK_OK(porta_tensor_free(y));
  CHECK_OK(porta_session_free(session));

  CHECK_OK(porta_session_create_with(model, kCpu, NULL, &session)); /* NULL: the defaults */
  CHECK_OK(porta_session_free(session));
  o.precision = "fp8";
  CHECK_FAILS(porta_session_create_with(model, kCpu, &o, &session), PORTA_ERROR_INVALID_ARGUMENT,
              "should be one of f32, bf16, f16, auto; got 'fp8'");
  o.precision = "bf16";
  o.size = 4;
  CHECK_FAILS(porta_session_create_with(model, kCpu, &o, &session), PORTA_ERROR_INVALID_ARGUMENT, "options->size");
  CHECK_OK(porta_tensor_free(x));
  CHECK_OK(porta_model_free(model));
  free(xv);
  free(expected);
}

/* ---- an op registered from C: Axpy(X, B; alpha) = alpha * X + B (B broadcast as in Add) ---- */

static int g_kernel_calls = 0;

static porta_status axpy_infer(porta_infer_context* ctx, void* user) {
  int present = 0;
  porta_dtype dt, dtb;
  int64_t dims[8], bdims[8];
  size_t rank = 0, brank = 0;
  (void)user;
  if (porta_infer_input(ctx, 0, &present, &dt, dims, 8, &rank) != PORTA_OK) return PORTA_ERROR_INTERNAL;
  if (porta_infer_input(ctx, 1, &present, &dtb, bdims, 8, &brank) != PORTA_OK) return PORTA_ERROR_INTERNAL;
  if (dt != PORTA_F32 || dtb != PORTA_F32)
    return porta_set_error(PORTA_ERROR_DTYPE, "[Axpy] X and B should be f32");
  if (rank == 0 || brank != 1 || bdims[0] != dims[rank - 1])
    return porta_set_error(PORTA_ERROR_SHAPE, "[Axpy] B should be 1-D with X's last dimension");
  return porta_infer_set_output(ctx, 0, dt, dims, rank);
}

static porta_status axpy_cpu(porta_kernel_context* ctx, void* user) {
  porta_tensor x, b, y;
  porta_attrs attrs;
  float *px, *pb, *py;
  double alpha;
  size_t bytes, n, d, i;
  int64_t bdim;
  (void)user;
  ++g_kernel_calls;
  if (porta_kernel_input(ctx, 0, &x) || porta_kernel_input(ctx, 1, &b) || porta_kernel_output(ctx, 0, &y) ||
      porta_kernel_attrs(ctx, &attrs))
    return PORTA_ERROR_INTERNAL;
  if (porta_attrs_get_float(attrs, "alpha", &alpha)) return PORTA_ERROR_INTERNAL;
  if (alpha == 13.0) return porta_set_error(PORTA_ERROR_UNSUPPORTED, "alpha 13 is unlucky");
  porta_tensor_data(x, (void**)&px);
  porta_tensor_data(b, (void**)&pb);
  porta_tensor_data(y, (void**)&py);
  porta_tensor_nbytes(x, &bytes);
  porta_tensor_shape(b, &bdim, 1);
  n = bytes / 4;
  d = (size_t)bdim;
  for (i = 0; i < n; ++i) py[i] = (float)alpha * px[i] + pb[i % d];
  /* Lent handles cannot be freed by the kernel. */
  if (porta_tensor_free(x) != PORTA_ERROR_INVALID_ARGUMENT) return PORTA_ERROR_INTERNAL;
  return PORTA_OK;
}

static porta_status axpy_composite(porta_builder* b, const int32_t* in, size_t n_in, porta_attrs attrs,
                                   int32_t* out, size_t n_out, void* user) {
  double alpha;
  float alpha_f;
  porta_tensor scalar;
  int32_t alpha_id, scaled, mul_in[2], add_in[2];
  (void)n_in; (void)n_out; (void)user;
  porta_attrs_get_float(attrs, "alpha", &alpha);
  alpha_f = (float)alpha;
  porta_tensor_create(kCpu, PORTA_F32, NULL, 0, &scalar);
  porta_tensor_copy_from_host(scalar, &alpha_f, 4);
  porta_builder_constant(b, scalar, &alpha_id);
  porta_tensor_free(scalar);
  mul_in[0] = in[0]; mul_in[1] = alpha_id;
  if (porta_builder_add(b, "Mul", mul_in, 2, NULL, &scaled, 1)) return PORTA_ERROR_INTERNAL;
  add_in[0] = scaled; add_in[1] = in[1];
  return porta_builder_add(b, "Add", add_in, 2, NULL, out, 1);
}

static void test_register(void) {
  static const char* const inputs[] = {"X", "B"};
  static const char* const outputs[] = {"Y"};
  porta_attr_def alpha = {"alpha", PORTA_ATTR_FLOAT, 0, 0, 2.0, NULL};
  porta_op_schema schema;
  porta_kernel_def kernel;
  int64_t shape[2] = {3, 4}, row[1] = {4};
  float x[12], bias[4], y[12];
  porta_tensor tx, tb, ins[2], out = NULL;
  porta_attrs attrs;
  size_t i;

  memset(&schema, 0, sizeof schema);
  schema.struct_size = sizeof schema;
  schema.name = "Axpy";
  schema.domain = "com.example.ctest";
  schema.inputs = inputs;
  schema.num_inputs = 2;
  schema.outputs = outputs;
  schema.num_outputs = 1;
  schema.attrs = &alpha;
  schema.num_attrs = 1;
  schema.infer = axpy_infer;
  schema.composite = axpy_composite;
  CHECK_OK(porta_register_op(&schema));
  CHECK_FAILS(porta_register_op(&schema), PORTA_ERROR_ALREADY_EXISTS, "already exists");
  schema.name = "Relu"; /* ONNX's Relu exists; another domain may have its own */
  schema.domain = "";
  CHECK_FAILS(porta_register_op(&schema), PORTA_ERROR_ALREADY_EXISTS, "'Relu' already exists");
  schema.domain = "com.example.ctest";
  schema.name = "NoInfer";
  schema.infer = NULL;
  CHECK_FAILS(porta_register_op(&schema), PORTA_ERROR_INVALID_ARGUMENT, "infer");
  CHECK_FAILS(porta_register_op(NULL), PORTA_ERROR_INVALID_ARGUMENT, "NULL");
  schema.struct_size = 8;
  CHECK_FAILS(porta_register_op(&schema), PORTA_ERROR_INVALID_ARGUMENT, "struct_size");

  for (i = 0; i < 12; ++i) x[i] = frand();
  for (i = 0; i < 4; ++i) bias[i] = frand();
  CHECK_OK(porta_tensor_wrap_host(x, sizeof x, PORTA_F32, shape, 2, &tx));
  CHECK_OK(porta_tensor_wrap_host(bias, sizeof bias, PORTA_F32, row, 1, &tb));
  ins[0] = tx;
  ins[1] = tb;

  /* Before any kernel: the composite runs. */
  CHECK_OK(porta_op_call("Axpy", ins, 2, NULL, &out, 1));
  CHECK_OK(porta_tensor_copy_to_host(out, y, sizeof y));
  for (i = 0; i < 12; ++i) CHECK(fabsf(y[i] - (2.0f * x[i] + bias[i % 4])) < 1e-6f);
  CHECK_OK(porta_tensor_free(out));
  CHECK(g_kernel_calls == 0);

  memset(&kernel, 0, sizeof kernel);
  kernel.struct_size = sizeof kernel;
  kernel.op = "Axpy";
  kernel.backend = PORTA_DEVICE_CPU;
  kernel.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  kernel.num_inputs = 3; /* disagrees with the schema */
  kernel.num_outputs = 1;
  kernel.fn = axpy_cpu;
  CHECK_FAILS(porta_register_kernel(&kernel), PORTA_ERROR_INVALID_ARGUMENT, "disagrees with the schema");
  kernel.num_inputs = 2;
  kernel.op = "NotAnOp";
  CHECK_FAILS(porta_register_kernel(&kernel), PORTA_ERROR_UNSUPPORTED, "unknown op 'NotAnOp'");
  kernel.op = "Axpy";
  kernel.dtypes = 1u << 20;
  CHECK_FAILS(porta_register_kernel(&kernel), PORTA_ERROR_INVALID_ARGUMENT, "dtypes");
  kernel.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  CHECK_OK(porta_register_kernel(&kernel));
  CHECK_FAILS(porta_register_kernel(&kernel), PORTA_ERROR_ALREADY_EXISTS, "already registered");

  CHECK_OK(porta_attrs_create(&attrs));
  CHECK_OK(porta_attrs_set_float(attrs, "alpha", -0.5));
  CHECK_OK(porta_op_call("Axpy", ins, 2, attrs, &out, 1));
  CHECK(g_kernel_calls == 1);
  CHECK_OK(porta_tensor_copy_to_host(out, y, sizeof y));
  for (i = 0; i < 12; ++i) CHECK(fabsf(y[i] - (-0.5f * x[i] + bias[i % 4])) < 1e-6f);
  CHECK_OK(porta_tensor_free(out));

  /* The kernel's own error and the inference's come back through porta. */
  CHECK_OK(porta_attrs_set_float(attrs, "alpha", 13.0));
  CHECK_FAILS(porta_op_call("Axpy", ins, 2, attrs, &out, 1), PORTA_ERROR_UNSUPPORTED, "[Axpy] alpha 13 is unlucky");
  ins[1] = tx;
  CHECK_FAILS(porta_op_call("Axpy", ins, 2, attrs, &out, 1), PORTA_ERROR_SHAPE, "[Axpy] B should be 1-D");
  CHECK_OK(porta_attrs_free(attrs));
  CHECK_OK(porta_tensor_free(tx));
  CHECK_OK(porta_tensor_free(tb));

  /* Contexts are refused outside their callbacks. */
  {
    size_t n;
    CHECK_FAILS(porta_kernel_num_inputs(NULL, &n), PORTA_ERROR_INVALID_HANDLE, "NULL");
    CHECK_FAILS(porta_kernel_num_inputs((porta_kernel_context*)(void*)&n, &n), PORTA_ERROR_INVALID_HANDLE,
                "valid only during their callback");
  }
}

/* On every other available device: copy in, run an op there, copy out; host pointers refused. */
static void test_other_devices(void) {
  porta_device devices[16];
  size_t n = 0, i, k;
  int available = 0;
  int64_t shape[1] = {9};
  float x[9], y[9];
  for (k = 0; k < 9; ++k) x[k] = frand();
  CHECK_OK(porta_device_list(devices, 16, &n));
  for (i = 0; i < n; ++i) {
    porta_tensor host = NULL, dev = NULL, out = NULL, back = NULL;
    porta_device where;
    void* data = NULL;
    if (devices[i].type == PORTA_DEVICE_CPU) continue;
    if (porta_device_available(devices[i], &available, NULL, 0) != PORTA_OK || !available) {
      porta_tensor never = NULL;
      CHECK(porta_tensor_create(devices[i], PORTA_F32, shape, 1, &never) == PORTA_ERROR_BACKEND_UNAVAILABLE);
      continue;
    }
    CHECK_OK(porta_tensor_wrap_host(x, sizeof x, PORTA_F32, shape, 1, &host));
    CHECK_OK(porta_tensor_to_device(host, devices[i], &dev));
    CHECK_OK(porta_tensor_device(dev, &where));
    CHECK(where.type == devices[i].type && where.index == devices[i].index);
    CHECK_FAILS(porta_tensor_data(dev, &data), PORTA_ERROR_DEVICE_MISMATCH, "only for cpu tensors");
    CHECK_OK(porta_op_call("Relu", &dev, 1, NULL, &out, 1));
    CHECK_OK(porta_tensor_copy_to_host(out, y, sizeof y));
    for (k = 0; k < 9; ++k) CHECK(y[k] == (x[k] > 0 ? x[k] : 0.0f));
    {
      porta_tensor mixed[2];
      mixed[0] = host;
      mixed[1] = dev;
      CHECK_FAILS(porta_op_call("Add", mixed, 2, NULL, &back, 1), PORTA_ERROR_DEVICE_MISMATCH, "different devices");
    }
    CHECK_OK(porta_tensor_free(out));
    CHECK_OK(porta_tensor_free(dev));
    CHECK_OK(porta_tensor_free(host));
  }
}

static void test_plugins_by_call(void) {
  CHECK_FAILS(porta_load_plugin(NULL), PORTA_ERROR_INVALID_ARGUMENT, "path");
  CHECK_FAILS(porta_load_plugin("/no/such/plugin.so"), PORTA_ERROR_INVALID_ARGUMENT, "no such file");
}

/* Every ONNX attribute type set and read back; unknown and mistyped attributes refused by the
 * op's schema, naming the op, the attribute and what the schema declares. */
static void test_attributes(void) {
  porta_attrs a = NULL;
  int64_t ints[4] = {0, 2, 1}, got_ints[4];
  double floats[2] = {0.5, -1.25}, got_floats[2];
  const char* strings[2] = {"relu", "tanh"};
  const char* got_strings[2];
  const char* text = NULL;
  size_t count = 0;
  int present = 0;
  int32_t type = -2;
  float values[6] = {1, 2, 3, 4, 5, 6}, result[6];
  int64_t shape[3] = {1, 2, 3};
  porta_device cpu = {PORTA_DEVICE_CPU, 0};
  porta_tensor t = NULL, tt = NULL, out = NULL;
  CHECK_OK(porta_attrs_create(&a));
  CHECK_OK(porta_attrs_set_string(a, "mode", "linear"));
  CHECK_OK(porta_attrs_set_ints(a, "perm", ints, 3));
  CHECK_OK(porta_attrs_set_floats(a, "scales", floats, 2));
  CHECK_OK(porta_attrs_set_strings(a, "activations", strings, 2));
  CHECK_OK(porta_tensor_create(cpu, PORTA_F32, shape, 3, &t));
  CHECK_OK(porta_tensor_copy_from_host(t, values, sizeof values));
  CHECK_OK(porta_attrs_set_tensor(a, "value", t));
  CHECK_OK(porta_attrs_get_string(a, "mode", &text));
  CHECK(text && strcmp(text, "linear") == 0);
  CHECK_OK(porta_attrs_get_ints(a, "perm", got_ints, 4, &count));
  CHECK(count == 3 && got_ints[1] == 2);
  CHECK_OK(porta_attrs_get_floats(a, "scales", NULL, 0, &count)); /* the count only */
  CHECK(count == 2);
  CHECK_OK(porta_attrs_get_floats(a, "scales", got_floats, 2, &count));
  CHECK(got_floats[1] == -1.25);
  CHECK_OK(porta_attrs_get_strings(a, "activations", got_strings, 2, &count));
  CHECK(count == 2 && strcmp(got_strings[1], "tanh") == 0);
  CHECK_OK(porta_attrs_get_tensor(a, "value", &tt));
  CHECK_OK(porta_tensor_copy_to_host(tt, result, sizeof result));
  CHECK(result[5] == 6);
  CHECK_OK(porta_tensor_free(tt));
  CHECK_OK(porta_attrs_type(a, "activations", &present, &type));
  CHECK(present == 1 && type == PORTA_ATTR_STRINGS);
  CHECK_OK(porta_attrs_type(a, "value", &present, &type));
  CHECK(present == 1 && type == PORTA_ATTR_TENSOR);
  CHECK_OK(porta_attrs_type(a, "missing", &present, &type));
  CHECK(present == 0 && type == -1);
  CHECK_FAILS(porta_attrs_get_floats(a, "perm", got_floats, 2, &count), PORTA_ERROR_INVALID_ARGUMENT,
              "'perm' should be floats, got ints");
  CHECK_FAILS(porta_attrs_get_string(a, "missing", &text), PORTA_ERROR_INVALID_ARGUMENT, "no attribute 'missing'");
  CHECK_FAILS(porta_attrs_set_strings(a, "bad", NULL, 2), PORTA_ERROR_INVALID_ARGUMENT, "values");
  CHECK_OK(porta_attrs_free(a));

  /* Transpose's perm, through the C ABI. */
  CHECK_OK(porta_attrs_create(&a));
  CHECK_OK(porta_attrs_set_ints(a, "perm", ints, 3));
  CHECK_OK(porta_op_call("Transpose", &t, 1, a, &out, 1));
  CHECK_OK(porta_tensor_shape(out, got_ints, 4));
  CHECK(got_ints[0] == 1 && got_ints[1] == 3 && got_ints[2] == 2);
  CHECK_OK(porta_tensor_free(out));
  out = NULL;
  CHECK_OK(porta_attrs_free(a));
  /* A typo and an int for a float: errors that name the op, the attribute and the schema. */
  CHECK_OK(porta_attrs_create(&a));
  CHECK_OK(porta_attrs_set_float(a, "alpah", 0.1));
  CHECK_FAILS(porta_op_call("LeakyRelu", &t, 1, a, &out, 1), PORTA_ERROR_INVALID_ARGUMENT,
              "[LeakyRelu] unknown attribute 'alpah' (float): LeakyRelu has alpha (float)");
  CHECK_OK(porta_attrs_free(a));
  CHECK_OK(porta_attrs_create(&a));
  CHECK_OK(porta_attrs_set_int(a, "alpha", 1));
  CHECK_FAILS(porta_op_call("LeakyRelu", &t, 1, a, &out, 1), PORTA_ERROR_INVALID_ARGUMENT,
              "attribute 'alpha' should be float, got int");
  CHECK(out == NULL);
  CHECK_OK(porta_attrs_free(a));
  CHECK_OK(porta_tensor_free(t));
}

int main(int argc, char** argv) {
  const char* models = argc > 1 ? argv[1] : "models";
  test_version_and_devices();
  test_tensors();
  test_ops();
  test_attributes();
  test_model(models);
  test_session_precision(models);
  test_register();
  test_other_devices();
  test_plugins_by_call();
  printf("c_api_test: %d checks, %d failed\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
