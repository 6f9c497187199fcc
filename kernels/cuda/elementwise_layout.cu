// porta gpu kernels — host side of the elementwise family: broadcasting and merging the
// operands' dimensions so the device does as little index math as possible.
#include "kernels/cuda/elementwise.cuh"

namespace porta::PORTA_GPU_NS {

Layout make_layout(const Shape& out_shape, const std::vector<const Tensor*>& inputs) {
  return make_layout(out_shape, contiguous_strides(out_shape), inputs);
}

Layout make_layout(const Tensor& out, const std::vector<const Tensor*>& inputs) {
  return make_layout(out.shape(), out.strides(), inputs);
}

Layout make_layout(const Shape& out_shape, const std::vector<int64_t>& out_strides,
                   const std::vector<const Tensor*>& inputs) {
  const int out_rank = static_cast<int>(out_shape.size());
  const size_t operands = inputs.size() + 1;
  // Per output dimension: size and each operand's stride (0 where it is broadcast).
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides(operands);
  for (int d = 0; d < out_rank; ++d) {
    if (out_shape[d] == 1) continue;  // size-1 dimensions move nothing
    sizes.push_back(out_shape[d]);
    strides[0].push_back(out_strides[d]);
    for (size_t k = 1; k < operands; ++k) {
      const Tensor& t = *inputs[k - 1];
      int lead = out_rank - t.rank();
      int64_t stride = 0;
      if (d >= lead && t.shape()[d - lead] != 1) stride = t.strides()[d - lead];
      strides[k].push_back(stride);
    }
  }
  // Merge dimension d into the one before when every operand steps through both as one.
  Layout l;
  l.strides.assign(operands, {});
  for (size_t d = 0; d < sizes.size(); ++d) {
    bool merge = !l.sizes.empty();
    for (size_t k = 0; k < operands && merge; ++k)
      merge = l.strides[k].back() == strides[k][d] * sizes[d];
    if (merge) {
      l.sizes.back() *= sizes[d];
      for (size_t k = 0; k < operands; ++k) l.strides[k].back() = strides[k][d];
    } else {
      l.sizes.push_back(sizes[d]);
      for (size_t k = 0; k < operands; ++k) l.strides[k].push_back(strides[k][d]);
    }
  }
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
