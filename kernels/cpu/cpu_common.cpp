// porta cpu kernels — broadcast indexing helpers.
#include "kernels/cpu/cpu_common.hpp"

#include "ops/broadcast_util.hpp"

namespace porta::cpu {

std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& out_shape) {
  return opdef::broadcast_strides(t.shape(), t.strides(), out_shape);
}

BroadcastIter::BroadcastIter(const Shape& out, const std::vector<const Tensor*>& inputs) : shape(out) {
  for (const Tensor* t : inputs) strides.push_back(broadcast_strides(*t, out));
  inner = shape.empty() ? 1 : shape.back();
  for (auto& s : strides) inner_stride.push_back(s.empty() ? 0 : s.back());
}

int64_t BroadcastIter::runs() const {
  if (shape.empty()) return 1;
  int64_t n = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
  return inner == 0 ? 0 : n;
}

void BroadcastIter::offsets(int64_t r, int64_t* out) const {
  for (size_t k = 0; k < strides.size(); ++k) out[k] = 0;
  for (size_t i = shape.size() - (shape.empty() ? 0 : 1); i-- > 0;) {
    int64_t idx = r % shape[i];
    r /= shape[i];
    for (size_t k = 0; k < strides.size(); ++k) out[k] += idx * strides[k][i];
  }
}

}  // namespace porta::cpu
