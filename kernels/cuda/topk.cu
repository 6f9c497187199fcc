// porta gpu kernels — TopK (any axis, largest, sorted), with the order of ops/topk.cpp:
// larger first (smaller with largest = 0), NaN larger than every number, equal values by
// lower index. The input is viewed as [outer, n, inner]; one thread per input element counts
// the elements of its row that come before it (its rank: the ranks of a row are a permutation
// of 0..n-1) and writes itself to output position rank when that is below K. The count stops
// once it reaches K, so for small K most threads leave early; the worst case (K near n, or a
// row sorted against the order) is n compares per element, so rows longer than 2^18 decline
// (the CPU kernel runs). K comes from the output shape: nothing is read back from the device.
#include "kernels/cuda/gpu_kernel.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::PORTA_GPU_NS {
namespace {

constexpr int64_t kMaxRow = int64_t{1} << 18;

// Whether (a, ia) comes before (b, ib): opdef::topk_before on the device.
template <typename A>
__device__ __forceinline__ bool before(A a, int64_t ia, A b, int64_t ib, bool largest) {
  if constexpr (!std::is_integral_v<A>) {
    const bool na = a != a, nb = b != b;
    if (na || nb) {
      if (na && nb) return ia < ib;
      return largest ? na : nb;
    }
  }
  if (a != b) return largest ? a > b : a < b;
  return ia < ib;
}

template <typename T>
__global__ void topk_rank_kernel(const T* x, T* values, int64_t* indices, int64_t total, int64_t n,
                                 int64_t inner, int64_t k, bool largest) {
  using A = acc_t<T>;
  int64_t step = int64_t{blockDim.x} * gridDim.x;
  for (int64_t w = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; w < total; w += step) {
    const int64_t r = w % inner, t = w / inner;
    const int64_t at = t % n, o = t / n;
    const T* row = x + o * n * inner + r;
    const A v = load_acc<T>(x[w]);
    int64_t rank = 0;
    for (int64_t j = 0; j < n && rank < k; ++j)
      if (before<A>(load_acc<T>(row[j * inner]), j, v, at, largest)) ++rank;
    if (rank < k) {
      const int64_t dst = (o * k + rank) * inner + r;
      values[dst] = x[w];
      indices[dst] = at;
    }
  }
}

std::string topk_supports(const KernelContext& ctx) {
  const int64_t row = opdef::topk_row_length(ctx);
  if (row > kMaxRow)
    return str("a row of ", row,
               " elements: the rank-counting kernel is quadratic in the row length (at most ", kMaxRow, ")");
  return "";
}

void topk_gpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor &values = ctx.out(0), &indices = ctx.out(1);
  const opdef::TopKRows rows = opdef::topk_rows(ctx);
  const int64_t n = rows.n, inner = rows.inner, k = rows.k;
  if (values.numel() == 0) return;
  const int device = ctx.device.index;
  const int64_t total = x.numel();
  const bool largest = ctx.attrs->get_int("largest") != 0;
  visit_gpu_dtype_in<kNumeric>(x.dtype(), "TopK", [&](auto tag) {
    using T = decltype(tag);
    launch<topk_rank_kernel<T>>(grid_for(total, 256, device), 256, 0, stream(device),
        device_ptr<const T>(x), device_ptr<T>(values), device_ptr<int64_t>(indices), total, n, inner, k, largest);
    PORTA_GPU_CHECK_LAUNCH(device, "topk_rank_kernel");
  });
}

}  // namespace

PORTA_REGISTER_GPU_KERNEL_IF(TopK, kNumeric, topk_gpu, topk_supports)

}  // namespace porta::PORTA_GPU_NS
