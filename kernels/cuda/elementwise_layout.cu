// porta gpu kernels — host side of the elementwise family: broadcasting and merging the
// operands' dimensions so the device does as little index math as possible.
#include "kernels/cuda/elementwise.cuh"
#include "ops/broadcast_util.hpp"

namespace porta::PORTA_GPU_NS {

Layout make_layout(const Shape& out_shape, const std::vector<const Tensor*>& inputs) {
  return make_layout(out_shape, contiguous_strides(out_shape), inputs);
}

Layout make_layout(const Tensor& out, const std::vector<const Tensor*>& inputs) {
  return make_layout(out.shape(), out.strides(), inputs);
}

Layout make_layout(const Shape& out_shape, const std::vector<int64_t>& out_strides,
                   const std::vector<const Tensor*>& inputs) {
  // Per output dimension, each operand's stride (0 where it is broadcast), then the merged
  // dimensions every operand steps through as one.
  std::vector<std::vector<int64_t>> strides;
  strides.reserve(inputs.size() + 1);
  strides.push_back(out_strides);
  for (const Tensor* t : inputs) strides.push_back(opdef::broadcast_strides(t->shape(), t->strides(), out_shape));
  opdef::MergedDims merged = opdef::merge_dims(out_shape, strides);
  const size_t operands = strides.size();
  Layout l;
  l.sizes = std::move(merged.sizes);
  l.strides = std::move(merged.strides);
  l.rank = static_cast<int>(l.sizes.size());
  l.contiguous = l.rank <= 1;
  for (size_t k = 0; k < operands && l.contiguous; ++k)
    l.contiguous = l.rank == 0 || l.strides[k][0] == 1;
  int64_t numel = 1;
  for (int64_t s : l.sizes) numel *= s;
  l.fits_32bit = numel <= INT32_MAX;
  for (size_t k = 0; k < operands; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < l.rank; ++d) {
      if (l.strides[k][d] < 0) l.fits_32bit = false;
      reach += (l.sizes[d] - 1) * std::abs(l.strides[k][d]);
    }
    if (reach > INT32_MAX) l.fits_32bit = false;
  }
  return l;
}

std::string elementwise_supports(const KernelContext& ctx) {
  // Outputs are not allocated yet: the output shape is the broadcast of the inputs.
  Shape out;
  std::vector<const Tensor*> inputs;
  for (const Tensor& t : ctx.inputs) {
    if (!t.defined()) continue;
    inputs.push_back(&t);
    if (t.rank() > static_cast<int>(out.size())) out.insert(out.begin(), t.rank() - out.size(), 1);
    for (int i = 0; i < t.rank(); ++i) {
      int64_t& o = out[out.size() - t.rank() + i];
      if (o == 1) o = t.shape()[i];
    }
  }
  Layout l = make_layout(out, inputs);
  if (l.rank > kMaxDims)
    return str("needs ", l.rank, " dimensions after merging, the kernel takes ", kMaxDims);
  return "";
}

}  // namespace porta::PORTA_GPU_NS
