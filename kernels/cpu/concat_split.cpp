// Concat and Split on cpu: each input (output) is copied into (out of) its window of the other
// along the axis (ops/view_util.hpp). A channel Concat of channels-last operands (DenseNet's
// every layer, Inception's every block) is a loop of its own: the rows of all inputs for a tile
// of pixels are gathered into the output's rows while that tile stays in cache.
#include <algorithm>

#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/target_clones.hpp"
#include "ops/view_util.hpp"

namespace porta::cpu {

// Pixels [p0, p1) of a channels-last channel Concat: input i holds channels[i] floats per
// pixel, the output c (their sum). In tiles of pixels whose output rows fit in the L1 cache,
// each input's rows are read in order and written at their offset in the tile's rows.
PORTA_CPU_CLONES
void concat_channels_last_f32(const float* const* src, const int64_t* channels, size_t inputs, float* dst, int64_t c,
                              int64_t p0, int64_t p1) {
  const int64_t tile = std::max<int64_t>(1, 8192 / std::max<int64_t>(c, 1));  // 32 KiB of output
  for (int64_t t0 = p0; t0 < p1; t0 += tile) {
    const int64_t t1 = std::min(p1, t0 + tile);
    int64_t at = 0;
    for (size_t i = 0; i < inputs; ++i) {
      const int64_t ci = channels[i];
      for (int64_t p = t0; p < t1; ++p) {
        const float* s = src[i] + p * ci;
        float* d = dst + p * c + at;
#pragma omp simd
        for (int64_t k = 0; k < ci; ++k) d[k] = s[k];
      }
      at += ci;
    }
  }
}

namespace {

// Concat / Split along the channel axis of rank 3-5 f32 tensors take them channels-last: the
// channel axis is then the last axis of the stored N x pixels x C tensors. All operands or none.
KernelDef::LayoutUse channel_axis_layout_use(const KernelContext& call, const Tensor& whole) {
  if (whole.dtype() != DType::f32 || whole.rank() < 3 || whole.rank() > 5) return {};
  int64_t axis = call.attrs->get_int("axis");
  if (axis != 1 && axis != 1 - whole.rank()) return {};
  uint64_t inputs = call.inputs.size() >= 64 ? 0 : (uint64_t{1} << call.inputs.size()) - 1;
  return {inputs, true, true};
}

}  // namespace

static void concat_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (activation_layout(*ctx.attrs).output) {
    // N x C x spatial stored as N x pixels x C: N * pixels rows of C floats.
    const int64_t rows = y.dim(1) == 0 ? 0 : y.numel() / y.dim(1);
    std::vector<const float*> src;
    std::vector<int64_t> channels;
    for (const Tensor& x : ctx.inputs) {
      if (!x.is_contiguous()) throw BackendError("[Concat] internal: a channels-last operand must be contiguous");
      if (x.numel() == 0) continue;
      src.push_back(x.data<float>());
      channels.push_back(x.dim(1));
    }
    float* dst = y.data<float>();
    const int64_t c = y.dim(1);
    // Threads take 64 KiB or more of the output each.
    parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1)), [&](int64_t p0, int64_t p1) {
      concat_channels_last_f32(src.data(), channels.data(), src.size(), dst, c, p0, p1);
    });
    return;
  }
  opdef::AxisParts p = opdef::concat_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.in(part.index).numel() > 0)
      copy_strided(ctx.in(part.index), y.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size));
}

static void split_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  opdef::AxisParts p = opdef::split_parts(ctx);
  for (const opdef::AxisPart& part : p.parts)
    if (ctx.out(part.index).numel() > 0)
      copy_strided(x.slice(static_cast<int>(p.axis), part.begin, part.begin + part.size), ctx.out(part.index));
}

namespace {
const bool concat_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "Concat";
  k.backend = DeviceType::cpu;
  k.dtypes = kAllTypes;
  k.fn = concat_cpu;
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = [](const KernelContext& call) { return channel_axis_layout_use(call, call.outputs.at(0)); };
  return k;
}());
}  // namespace
PORTA_REGISTER_KERNEL(Split, cpu, kAllTypes, split_cpu)

}  // namespace porta::cpu
