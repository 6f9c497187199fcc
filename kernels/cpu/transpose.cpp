// Transpose on cpu: large f32 transposes through oneDNN's reorder (a strided source
// descriptor into a plain destination: its jit reorder blocks for the cache and uses vector
// transposes); every other case as the permuted view copied in cache tiles.
#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "ops/shape_util.hpp"

namespace porta::cpu {

static void transpose_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> perm =
      opdef::transpose_perm(x.shape().size(), ctx.attrs->get_ints("perm", {}), "Transpose");
  Tensor view = x.permute(std::vector<int>(perm.begin(), perm.end()));
  // A contiguous input only: a view's zero or overlapping strides are the tiled copy's job.
  if (x.dtype() == DType::f32 && x.numel() >= (int64_t{1} << 16) && x.rank() <= 6 && x.is_contiguous() &&
      y.is_contiguous()) {
    try {
      dnnl::memory::dims strides(view.strides().begin(), view.strides().end());
      dnnl::memory::desc src(dims_of(view.shape()), dnnl::memory::data_type::f32, strides);
      reorder_into(wrap_ptr(src, x.raw_data()), wrap_ptr(plain_desc(y.shape(), DType::f32), y.raw_data()));
      return;
    } catch (const dnnl::error&) {
      // oneDNN refused this geometry: the tiled copy below does every case.
    }
  }
  copy_strided(view, y);
}

PORTA_REGISTER_KERNEL(Transpose, cpu, kAllTypes, transpose_cpu)

}  // namespace porta::cpu
