// Gather on cpu: indices are checked first (out of range -> ShapeError, nothing written),
// then each (outer, index) pair copies one contiguous block of the inner dims.
#include <cstring>

#include "kernels/cpu/cpu_common.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"

namespace porta::cpu {

static void gather_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "Gather");
  int64_t dim = x.shape()[axis], n_idx = ind.numel();
  std::vector<int64_t> idx(static_cast<size_t>(n_idx));
  for (int64_t i = 0; i < n_idx; ++i) {
    int64_t k = ind.dtype() == DType::i64 ? ind.data<int64_t>()[i] : ind.data<int32_t>()[i];
    opdef::check_gather_index(k, dim, axis, x.shape());
    idx[i] = k < 0 ? k + dim : k;
  }
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int i = static_cast<int>(axis) + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  if (y.numel() == 0) return;
  size_t block = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  parallel_for(outer * n_idx, std::max<int64_t>(1, (1 << 16) / static_cast<int64_t>(block + 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      int64_t o = w / n_idx, i = w % n_idx;
      std::memcpy(dst + w * block, src + (o * dim + idx[i]) * block, block);
    }
  });
}

PORTA_REGISTER_KERNEL(Gather, cpu, kAllTypes, gather_cpu)

}  // namespace porta::cpu
