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
  if (y.rank() != 2 || y.shape()[1] != static_cast<int64_t>(positions.size()))
    throw ShapeError(str("[NonZero] expected an output of shape [", std::max<size_t>(x.rank(), 1), ", ",
                         positions.size(), "], got ", shape_str(y.shape())));
  opdef::write_nonzero_coordinates(x.shape(), positions, y.data<int64_t>());
}

}  // namespace

PORTA_REGISTER_KERNEL(NonZero, cpu, kAllTypes, nonzero_cpu)

}  // namespace porta::cpu
