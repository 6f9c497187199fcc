// NonZero on cpu: the positions are found once on the host (the input is a host input of the
// op) and written out as coordinates, one row per axis.
#include "kernels/cpu/cpu_common.hpp"
#include "ops/nonzero.hpp"

namespace porta::cpu {
namespace {

void nonzero_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  std::vector<int64_t> positions = opdef::nonzero_positions(x);
  opdef::check_nonzero_output(x, y, positions);
  opdef::write_nonzero_coordinates(x.shape(), positions, y.data<int64_t>());
}

}  // namespace

PORTA_REGISTER_KERNEL(NonZero, cpu, kAllTypes, nonzero_cpu)

}  // namespace porta::cpu
