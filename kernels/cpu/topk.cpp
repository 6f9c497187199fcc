// TopK on cpu: input viewed as [outer, n, inner]; each (outer, inner) row is gathered into
// (value, index) pairs and partially sorted with opdef::topk_before (NaN largest, lower index
// first on ties: the op's order), then the first K are written. Rows run in parallel.
#include <algorithm>
#include <numeric>

#include "kernels/cpu/cpu_common.hpp"
#include "ops/common.hpp"
#include "ops/order_util.hpp"

namespace porta::cpu {
namespace {

template <typename S, typename T>
void topk_typed(const S* x, S* values, int64_t* indices, int64_t outer, int64_t n, int64_t inner, int64_t k,
                bool largest) {
  parallel_for(outer * inner, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    std::vector<T> row(static_cast<size_t>(n));
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t w = b; w < e; ++w) {
      int64_t o = w / inner, i = w % inner;
      const S* base = x + o * n * inner + i;
      for (int64_t j = 0; j < n; ++j) row[j] = static_cast<T>(base[j * inner]);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t c) {
        return opdef::topk_before(row[a], a, row[c], c, largest);
      });
      for (int64_t j = 0; j < k; ++j) {
        int64_t at = (o * k + j) * inner + i;
        values[at] = base[order[j] * inner];
        indices[at] = order[j];
      }
    }
  });
}

void topk_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor &values = ctx.out(0), &indices = ctx.out(1);
  const auto [axis, outer, n, inner, k] = opdef::topk_rows(ctx);
  bool largest = ctx.attrs->get_int("largest") != 0;
  if (values.numel() == 0) return;
  visit_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    if constexpr (std::is_same_v<S, bool>) {
      throw DTypeError("[TopK] expected a numeric X, got bool");
    } else if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
      topk_typed<S, float>(x.data<S>(), values.data<S>(), indices.data<int64_t>(), outer, n, inner, k, largest);
    } else {
      topk_typed<S, S>(x.data<S>(), values.data<S>(), indices.data<int64_t>(), outer, n, inner, k, largest);
    }
  });
}

}  // namespace

PORTA_REGISTER_KERNEL(TopK, cpu, kNumeric, topk_cpu)

}  // namespace porta::cpu
