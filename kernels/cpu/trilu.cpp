// Trilu on cpu: per row of each matrix, the kept columns are one contiguous run (upper: from
// row + k to the end; lower: up to row + k), copied as bytes; the rest is zero bits (0 in
// every dtype). Matrices run in parallel.
#include <cstring>

#include "kernels/cpu/cpu_common.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::cpu {
namespace {

void trilu_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  int64_t k = opdef::trilu_k(ctx);
  bool upper = ctx.attrs->get_int("upper") != 0;
  int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  if (y.numel() == 0) return;
  size_t elem = dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  int64_t total_rows = x.numel() / cols;
  parallel_for(total_rows, std::max<int64_t>(1, (1 << 15) / cols), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      int64_t i = r % rows;
      // Kept columns [begin, end): upper j >= i + k, lower j <= i + k (k may be huge: clamp
      // before adding).
      int64_t diag = std::clamp<int64_t>(k, -rows - 1, cols + 1) + i;
      int64_t begin = upper ? std::clamp<int64_t>(diag, 0, cols) : 0;
      int64_t end = upper ? cols : std::clamp<int64_t>(diag + 1, 0, cols);
      char* out = dst + r * cols * elem;
      const char* in = src + r * cols * elem;
      std::memset(out, 0, static_cast<size_t>(cols) * elem);
      if (end > begin) std::memcpy(out + begin * elem, in + begin * elem, static_cast<size_t>(end - begin) * elem);
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(Trilu, cpu, kAllTypes, trilu_cpu)

}  // namespace porta::cpu
