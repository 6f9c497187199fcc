// porta gpu kernels — MatMul (NumPy semantics, broadcast batches) and Gemm (ONNX: alpha,
// beta, transA/transB, C broadcast to [M, N]) on top of gemm.cuh.
#include "kernels/cuda/gemm.cuh"

namespace porta::PORTA_GPU_NS {
namespace {

// MatMul geometry: sizes after promoting 1-D operands, and the merged batch layout.
struct MatMulPlan {
  int64_t m = 0, n = 0, k = 0;
  int64_t batches = 1;
  std::vector<int64_t> sizes;                    // merged batch dimensions
  std::vector<std::array<int64_t, 3>> strides;   // per dimension: C, A, B element strides
};

MatMulPlan plan_matmul(const Shape& a0, const Shape& b0) {
  Shape a = a0, b = b0;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  size_t rank = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), rank - ba.size(), 1);
  bb.insert(bb.begin(), rank - bb.size(), 1);
  // Walk batch dimensions from the innermost out, merging where all three step as one.
  int64_t sc = p.m * p.n, sa = p.m * p.k, sb = p.k * p.n;
  std::vector<int64_t> sizes;
  std::vector<std::array<int64_t, 3>> strides;
  for (size_t i = rank; i-- > 0;) {
    int64_t size = ba[i] == 1 ? bb[i] : ba[i];  // broadcasting 0 with 1 gives 0, not max()
    std::array<int64_t, 3> st = {sc, ba[i] == 1 ? 0 : sa, bb[i] == 1 ? 0 : sb};
    sc *= size;
    sa *= ba[i];
    sb *= bb[i];
    p.batches *= size;
    if (size == 1) continue;
    if (!sizes.empty()) {
      const auto& inner = strides.back();
      bool merge = true;
      for (int k = 0; k < 3; ++k) merge &= st[k] == inner[k] * sizes.back();
      if (merge) {
        sizes.back() *= size;
        continue;
      }
    }
    sizes.push_back(size);
    strides.push_back(st);
  }
  p.sizes.assign(sizes.rbegin(), sizes.rend());
  p.strides.assign(strides.rbegin(), strides.rend());
  return p;
}

std::string matmul_supports(const KernelContext& ctx) {
  MatMulPlan p = plan_matmul(ctx.in(0).shape(), ctx.in(1).shape());
  if (p.sizes.size() > static_cast<size_t>(kMaxDims))
    return str("needs ", p.sizes.size(), " batch dimensions after merging, the kernel takes ", kMaxDims);
  return "";
}

void matmul_gpu(KernelContext& ctx) {
  MatMulPlan p = plan_matmul(ctx.in(0).shape(), ctx.in(1).shape());
  visit_gpu_dtype_in<kFloats>(ctx.in(0).dtype(), "MatMul", [&](auto tag) {
    using T = decltype(tag);
    GemmCall<T> call;
    call.a = device_ptr<const T>(ctx.in(0));
    call.b = device_ptr<const T>(ctx.in(1));
    call.c = device_ptr<T>(ctx.out(0));
    call.m = p.m;
    call.n = p.n;
    call.k = p.k;
    call.lda = p.k;
    call.ldb = p.n;
    call.ldc = p.n;
    call.batches = p.batches;
    call.batch.rank = static_cast<int>(p.sizes.size());
    for (size_t d = 0; d < p.sizes.size(); ++d) {
      call.batch.sizes[d] = p.sizes[d];
      for (int k = 0; k < 3; ++k) call.batch.strides[k][d] = p.strides[d][k];
    }
    gemm(call, ctx.device.index);
  });
}

struct CopyFn {
  template <typename A>
  __device__ A operator()(A x) const { return x; }
};

void gemm_gpu(KernelContext& ctx) {
  const Attributes& at = *ctx.attrs;
  bool ta = at.get_int("transA") != 0, tb = at.get_int("transB") != 0;
  double alpha = at.get_float("alpha"), beta = at.get_float("beta");
  const Tensor &a = ctx.in(0), &b = ctx.in(1);
  Tensor& y = ctx.out(0);
  bool use_c = ctx.has_input(2) && beta != 0.0;  // beta == 0 ignores C (NaN too), as PyTorch
  visit_gpu_dtype_in<kFloats>(a.dtype(), "Gemm", [&](auto tag) {
    using T = decltype(tag);
    if (use_c && y.numel() > 0) {
      // Y = broadcast(C) first; the GEMM then accumulates beta * Y into it.
      KernelContext copy;
      copy.device = ctx.device;
      copy.inputs = {ctx.in(2)};
      copy.outputs = {y};
      launch_elementwise<T, T, 1>(copy, CopyFn{});
    }
    GemmCall<T> call;
    call.a = device_ptr<const T>(a);
    call.b = device_ptr<const T>(b);
    call.c = device_ptr<T>(y);
    call.m = y.dim(0);
    call.n = y.dim(1);
    call.k = ta ? a.dim(0) : a.dim(1);
    call.trans_a = ta;
    call.trans_b = tb;
    call.lda = a.dim(1);
    call.ldb = b.dim(1);
    call.ldc = call.n;
    call.alpha = alpha;
    call.beta = use_c ? beta : 0.0;
    gemm(call, ctx.device.index);
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(MatMul, kFloats, matmul_gpu, matmul_supports)
PORTA_REGISTER_GPU_KERNEL(Gemm, kFloats, gemm_gpu)

}  // namespace porta::PORTA_GPU_NS
