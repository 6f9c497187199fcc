// GatherElements, GatherND, ScatterElements, ScatterND on cpu. Indices are read and checked
// first (an index out of range is a ShapeError, nothing is written; ops/gather_util.hpp), then
// turned into flat offsets (elements) or rows of contiguous slices (ND). Gathers copy raw bytes
// in parallel; scatters copy the data, then apply the updates in the order of the indices on
// one thread, so duplicates accumulate exactly and, for reduction none, the last one wins.
#include <cstring>
#include <utility>

#include "kernels/cpu/cpu_common.hpp"
#include "ops/common.hpp"
#include "ops/gather_util.hpp"

namespace porta::cpu {
namespace {

using opdef::ScatterReduction;

// Copies rows of `block` bytes: dst row i <- src row rows[i].
void gather_rows(const Tensor& x, Tensor& y, const std::vector<int64_t>& rows, int64_t slice) {
  if (y.numel() == 0) return;
  size_t block = static_cast<size_t>(slice) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  int64_t n = static_cast<int64_t>(rows.size());
  parallel_for(n, std::max<int64_t>(1, (1 << 16) / static_cast<int64_t>(block + 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memcpy(dst + i * block, src + rows[i] * block, block);
  });
}

void gather_elements_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "GatherElements");
  std::vector<int64_t> offsets =
      opdef::element_offsets("GatherElements", x.shape(), ind.shape(), axis, opdef::host_index_values(ind));
  gather_rows(x, y, offsets, 1);
}

void gather_nd_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1);
  Tensor& y = ctx.out(0);
  opdef::NdPlan plan = opdef::nd_plan("GatherND", x.shape(), ind.shape(), ctx.attrs->get_int("batch_dims"),
                                      opdef::host_index_values(ind));
  gather_rows(x, y, plan.rows, plan.slice);
}

// y = data, then y[target[u] * slice + s] (op)= updates[u * slice + s] in order of u.
void scatter_rows(const Tensor& x, const Tensor& upd, Tensor& y, const std::vector<int64_t>& target, int64_t slice,
                  ScatterReduction r) {
  if (y.numel() == 0) return;
  std::memcpy(y.raw_data(), x.raw_data(), y.nbytes());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = decltype(+std::declval<T>());  // arithmetic type: float for Half, int for 8-bit and bool
    const T* u = upd.data<T>();
    T* out = y.data<T>();
    for (size_t i = 0; i < target.size(); ++i) {
      T* d = out + target[i] * slice;
      const T* s = u + static_cast<int64_t>(i) * slice;
      for (int64_t j = 0; j < slice; ++j) {
        A a = d[j], b = s[j];
        switch (r) {
          case ScatterReduction::none: d[j] = s[j]; break;
          case ScatterReduction::add: d[j] = static_cast<T>(a + b); break;
          case ScatterReduction::mul: d[j] = static_cast<T>(a * b); break;
          case ScatterReduction::max: d[j] = static_cast<T>(a < b ? b : a); break;
          case ScatterReduction::min: d[j] = static_cast<T>(b < a ? b : a); break;
        }
      }
    }
  });
}

void scatter_elements_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2);
  Tensor& y = ctx.out(0);
  int64_t axis = opdef::normalize_axis(ctx.attrs->get_int("axis"), x.rank(), "ScatterElements");
  ScatterReduction r = opdef::scatter_reduction(*ctx.attrs, "ScatterElements");
  std::vector<int64_t> offsets =
      opdef::element_offsets("ScatterElements", x.shape(), ind.shape(), axis, opdef::host_index_values(ind));
  scatter_rows(x, upd, y, offsets, 1, r);
}

void scatter_nd_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &ind = ctx.in(1), &upd = ctx.in(2);
  Tensor& y = ctx.out(0);
  ScatterReduction r = opdef::scatter_reduction(*ctx.attrs, "ScatterND");
  opdef::NdPlan plan = opdef::nd_plan("ScatterND", x.shape(), ind.shape(), 0, opdef::host_index_values(ind));
  scatter_rows(x, upd, y, plan.rows, plan.slice, r);
}

}  // namespace

PORTA_REGISTER_KERNEL(GatherElements, cpu, kAllTypes, gather_elements_cpu)
PORTA_REGISTER_KERNEL(GatherND, cpu, kAllTypes, gather_nd_cpu)
PORTA_REGISTER_KERNEL(ScatterElements, cpu, kAllTypes, scatter_elements_cpu)
PORTA_REGISTER_KERNEL(ScatterND, cpu, kAllTypes, scatter_nd_cpu)

}  // namespace porta::cpu
