// Pad on cpu: per axis, a table of the input index each output index reads (-1: the
// constant); rows whose outer indices all hit the input copy their inner run through the
// innermost table (one block copy where that table is a single run of the input), other rows
// are filled with the constant. Works on raw element bytes, so every dtype shares one path.
#include <cstring>

#include "kernels/cpu/cpu_common.hpp"
#include "ops/shape_util.hpp"

namespace porta::cpu {
namespace {

template <typename E>
void pad_typed(const E* src, E* dst, const Shape& in, const Shape& out,
               const std::vector<std::vector<int64_t>>& map, E value) {
  int r = static_cast<int>(out.size());
  if (r == 0) {
    *dst = *src;
    return;
  }
  std::vector<int64_t> in_strides = contiguous_strides(in);
  int64_t inner = out[r - 1], rows = 1;
  for (int i = 0; i + 1 < r; ++i) rows *= out[i];
  const std::vector<int64_t>& inner_map = map[r - 1];
  // The innermost table as [value x head][input run of `run` elements from `run_src`][value x
  // tail] (every table of constant mode, and reflect/edge tables without padding on this axis):
  // rows then copy one block instead of walking the table per element.
  int64_t head = 0, run = 0, run_src = 0;
  while (head < inner && inner_map[head] < 0) ++head;
  if (head < inner) run_src = inner_map[head];
  while (head + run < inner && inner_map[head + run] == run_src + run) ++run;
  bool block = true;
  for (int64_t o = head + run; o < inner && block; ++o) block = inner_map[o] < 0;
  parallel_for(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      E* d = dst + row * inner;
      int64_t rest = row, src_off = 0;
      bool inside = true;
      for (int i = r - 2; i >= 0 && inside; --i) {
        int64_t o = rest % out[i];
        rest /= out[i];
        int64_t s = map[i][o];
        inside = s >= 0;
        src_off += s * in_strides[i];
      }
      if (!inside) {
        std::fill(d, d + inner, value);
        continue;
      }
      const E* s = src + src_off;
      if (block) {
        std::fill(d, d + head, value);
        if (run > 0) std::memcpy(d + head, s + run_src, static_cast<size_t>(run) * sizeof(E));
        std::fill(d + head + run, d + inner, value);
        continue;
      }
      for (int64_t o = 0; o < inner; ++o) d[o] = inner_map[o] >= 0 ? s[inner_map[o]] : value;
    }
  });
}

}  // namespace

static void pad_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  std::vector<int64_t> pads = opdef::tensor_ints(ctx.in(1));
  std::string mode = ctx.attrs->get_string("mode");
  int r = x.rank();
  std::vector<std::vector<int64_t>> map(r);
  for (int i = 0; i < r; ++i)
    for (int64_t o = 0; o < y.shape()[i]; ++o)
      map[i].push_back(opdef::pad_source_index(o, pads[i], x.shape()[i], mode));
  size_t elem = dtype_size(x.dtype());
  uint64_t value = 0;  // all-zero bits are 0 in every dtype
  if (ctx.has_input(2)) std::memcpy(&value, ctx.in(2).raw_data(), elem);
  const void* s = x.numel() > 0 ? x.raw_data() : nullptr;
  void* d = y.raw_data();
  switch (elem) {
    case 1: pad_typed(static_cast<const uint8_t*>(s), static_cast<uint8_t*>(d), x.shape(), y.shape(), map, static_cast<uint8_t>(value)); break;
    case 2: pad_typed(static_cast<const uint16_t*>(s), static_cast<uint16_t*>(d), x.shape(), y.shape(), map, static_cast<uint16_t>(value)); break;
    case 4: pad_typed(static_cast<const uint32_t*>(s), static_cast<uint32_t*>(d), x.shape(), y.shape(), map, static_cast<uint32_t>(value)); break;
    default: pad_typed(static_cast<const uint64_t*>(s), static_cast<uint64_t*>(d), x.shape(), y.shape(), map, value); break;
  }
}

PORTA_REGISTER_KERNEL(Pad, cpu, kAllTypes, pad_cpu)

}  // namespace porta::cpu
