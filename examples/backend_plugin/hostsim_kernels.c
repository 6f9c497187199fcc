/* example_hostsim — kernels for device kind "hostsim" (f32): Add, Sub, Mul, Div with ONNX
 * (numpy) broadcasting, Relu, and MatMul with batch broadcasting and 1-D operands. Other ops
 * run on hostsim as their composite when they have one, else on the cpu with copies — porta's
 * dispatcher decides; `porta ops model.onnx --device hostsim:0` says which for every node.
 * Inputs arrive contiguous (porta packs views first); tensor_data gives the element pointer. */
#include <stdio.h>
#include <string.h>

#include "hostsim.h"

#define MAX_RANK 16

typedef struct view {
  float* data;
  size_t rank;
  int64_t dims[MAX_RANK];
} view;

static porta_status fail(porta_status s, const char* op, const char* what) {
  char msg[256];
  snprintf(msg, sizeof msg, "[%s] hostsim: %s", op, what);
  return hostsim_porta->set_error(s, msg);
}

static porta_status read_view(porta_tensor t, const char* op, view* v) {
  porta_status s;
  porta_dtype dtype;
  if ((s = hostsim_porta->tensor_dtype(t, &dtype))) return s;
  if (dtype != PORTA_F32) return fail(PORTA_ERROR_DTYPE, op, "only f32 is implemented");
  if ((s = hostsim_porta->tensor_rank(t, &v->rank))) return s;
  if (v->rank > MAX_RANK) return fail(PORTA_ERROR_SHAPE, op, "rank above 16");
  if ((s = hostsim_porta->tensor_shape(t, v->dims, MAX_RANK))) return s;
  return hostsim_porta->tensor_data(t, (void**)&v->data);
}

static porta_status arg(porta_kernel_context* ctx, int output, size_t i, const char* op, view* v) {
  porta_tensor t;
  porta_status s = output ? hostsim_porta->kernel_output(ctx, i, &t) : hostsim_porta->kernel_input(ctx, i, &t);
  return s ? s : read_view(t, op, v);
}

static int64_t numel(const view* v) {
  int64_t n = 1;
  size_t i;
  for (i = 0; i < v->rank; ++i) n *= v->dims[i];
  return n;
}

/* Strides (in elements) of `v` read as an `rank`-dimensional operand of shape `out`: aligned
 * to the right, 0 along broadcast axes. */
static void broadcast_strides(const view* v, size_t rank, int64_t* strides) {
  int64_t step = 1;
  size_t i;
  for (i = 0; i < rank; ++i) strides[i] = 0;
  for (i = 0; i < v->rank; ++i) {
    size_t d = v->rank - 1 - i;
    strides[rank - 1 - i] = v->dims[d] == 1 ? 0 : step;
    step *= v->dims[d];
  }
}

/* ---- elementwise ------------------------------------------------------------------------------ */

typedef enum binary_op { ADD, SUB, MUL, DIV } binary_op;
static const char* const kBinaryNames[] = {"Add", "Sub", "Mul", "Div"};

static float apply(binary_op op, float a, float b) {
  switch (op) {
    case ADD: return a + b;
    case SUB: return a - b;
    case MUL: return a * b;
    default: return a / b;
  }
}

static porta_status binary(porta_kernel_context* ctx, void* user) {
  binary_op op = (binary_op)(intptr_t)user;
  const char* name = kBinaryNames[op];
  view a, b, y;
  int64_t sa[MAX_RANK], sb[MAX_RANK], idx[MAX_RANK], n, i, ia = 0, ib = 0;
  porta_status s;
  if ((s = arg(ctx, 0, 0, name, &a)) || (s = arg(ctx, 0, 1, name, &b)) || (s = arg(ctx, 1, 0, name, &y))) return s;
  n = numel(&y);
  if (numel(&a) == n && numel(&b) == n) { /* same shape: one flat loop */
    for (i = 0; i < n; ++i) y.data[i] = apply(op, a.data[i], b.data[i]);
    return PORTA_OK;
  }
  broadcast_strides(&a, y.rank, sa);
  broadcast_strides(&b, y.rank, sb);
  memset(idx, 0, sizeof idx);
  for (i = 0; i < n; ++i) {
    size_t d;
    y.data[i] = apply(op, a.data[ia], b.data[ib]);
    for (d = y.rank; d-- > 0;) { /* odometer step over the output's index */
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < y.dims[d]) break;
      ia -= sa[d] * y.dims[d];
      ib -= sb[d] * y.dims[d];
      idx[d] = 0;
    }
  }
  return PORTA_OK;
}

static porta_status relu(porta_kernel_context* ctx, void* user) {
  view x, y;
  int64_t i, n;
  porta_status s;
  (void)user;
  if ((s = arg(ctx, 0, 0, "Relu", &x)) || (s = arg(ctx, 1, 0, "Relu", &y))) return s;
  n = numel(&y);
  for (i = 0; i < n; ++i) y.data[i] = x.data[i] > 0.0f ? x.data[i] : 0.0f;
  return PORTA_OK;
}

/* ---- MatMul (numpy matmul semantics) ------------------------------------------------------- */

/* Offset of the matrix of `v` (batch dims = all but the last two) for output batch index `idx`
 * of `batch_rank` dims. */
static int64_t batch_offset(const view* v, const int64_t* idx, size_t batch_rank) {
  size_t vb = v->rank > 2 ? v->rank - 2 : 0, i;
  int64_t off = 0, step = v->rank >= 2 ? v->dims[v->rank - 1] * v->dims[v->rank - 2] : 0;
  for (i = 0; i < vb; ++i) {
    size_t d = vb - 1 - i;
    int64_t k = v->dims[d] == 1 ? 0 : idx[batch_rank - 1 - i];
    off += k * step;
    step *= v->dims[d];
  }
  return off;
}

static porta_status matmul(porta_kernel_context* ctx, void* user) {
  view a, b, y;
  int64_t m, k, n, kb, batches = 1, bi, idx[MAX_RANK];
  size_t batch_rank, d;
  porta_status s;
  (void)user;
  if ((s = arg(ctx, 0, 0, "MatMul", &a)) || (s = arg(ctx, 0, 1, "MatMul", &b)) || (s = arg(ctx, 1, 0, "MatMul", &y)))
    return s;
  if (a.rank == 0 || b.rank == 0) return fail(PORTA_ERROR_SHAPE, "MatMul", "scalar operands");
  m = a.rank == 1 ? 1 : a.dims[a.rank - 2];
  k = a.dims[a.rank - 1];
  kb = b.rank == 1 ? b.dims[0] : b.dims[b.rank - 2];
  n = b.rank == 1 ? 1 : b.dims[b.rank - 1];
  if (k != kb) return fail(PORTA_ERROR_SHAPE, "MatMul", "inner dimensions differ");
  /* The output's batch dims are what precedes its matrix dims (none of a 1-D operand). */
  batch_rank = y.rank - (a.rank > 1 ? 1 : 0) - (b.rank > 1 ? 1 : 0);
  for (d = 0; d < batch_rank; ++d) batches *= y.dims[d];
  memset(idx, 0, sizeof idx);
  for (bi = 0; bi < batches; ++bi) {
    const float* pa = a.data + batch_offset(&a, idx, batch_rank);
    const float* pb = b.data + batch_offset(&b, idx, batch_rank);
    float* py = y.data + bi * m * n;
    int64_t i, j, p;
    for (i = 0; i < m * n; ++i) py[i] = 0.0f;
    for (i = 0; i < m; ++i)
      for (p = 0; p < k; ++p) {
        float av = pa[i * k + p];
        const float* row = pb + p * n;
        for (j = 0; j < n; ++j) py[i * n + j] += av * row[j];
      }
    for (d = batch_rank; d-- > 0;) {
      if (++idx[d] < y.dims[d]) break;
      idx[d] = 0;
    }
  }
  return PORTA_OK;
}

/* ---- registration --------------------------------------------------------------------------- */

static porta_status add_kernel(const char* op, porta_kernel_fn fn, void* user, int32_t num_inputs) {
  porta_kernel_def k;
  memset(&k, 0, sizeof k);
  k.struct_size = sizeof k;
  k.op = op;
  k.backend_name = "hostsim"; /* the kind this plugin's backend registered */
  k.dtypes = PORTA_DTYPE_BIT(PORTA_F32);
  k.num_inputs = num_inputs;
  k.num_outputs = 1;
  k.fn = fn;
  k.user_data = user;
  return hostsim_porta->register_kernel(&k);
}

porta_status hostsim_register_kernels(void) {
  porta_status s;
  int op;
  for (op = ADD; op <= DIV; ++op)
    if ((s = add_kernel(kBinaryNames[op], binary, (void*)(intptr_t)op, 2))) return s;
  if ((s = add_kernel("Relu", relu, NULL, 1))) return s;
  return add_kernel("MatMul", matmul, NULL, 2);
}
