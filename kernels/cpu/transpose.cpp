// Transpose on cpu: the permuted view copied in cache tiles (copy_strided; 32-bit elements move
// as 16x16 register transposes: 4096x4096 f32 in 5.2 ms, where oneDNN's jit reorder took 11.4).
//
// The permutations between NC[D]HW and N[D]HWC meet the channels-last layout the cpu convs
// keep activations in (kernels/cpu/dnn_layout.hpp): an f32 input stored channels-last permuted
// to N[D]HWC, or an N[D]HWC input permuted to NC[D]HW and stored channels-last, is the same
// bytes, so the step copies them flat. Networks that permute around per-pixel layers (convnext:
// depthwise Conv -> permute -> LayerNormalization and Linear layers -> permute back -> Mul ->
// Add) then take no transpose at all where the conv's output would otherwise be reordered to
// NC[D]HW and transposed straight back.
#include <cstring>

#include "kernels/cpu/copy_view.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "ops/shape_util.hpp"

namespace porta::cpu {
namespace {

// 1: perm moves the channels last (0, 2, ..., r-1, 1); -1: it moves them back (0, r-1, 1, ...,
// r-2); 0: neither (or a rank the channels-last layout does not cover). At rank 3 both are
// (0, 2, 1): that one reads a channels-last input (the side a conv's output meets first).
int channels_perm(const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (r < 3 || r > 5 || perm[0] != 0) return 0;
  bool to_last = perm[r - 1] == 1, to_first = perm[1] == static_cast<int64_t>(r - 1);
  for (size_t i = 1; i + 1 < r; ++i) to_last = to_last && perm[i] == static_cast<int64_t>(i + 1);
  for (size_t i = 2; i < r; ++i) to_first = to_first && perm[i] == static_cast<int64_t>(i - 1);
  return to_last ? 1 : to_first ? -1 : 0;
}

std::vector<int64_t> perm_of(const KernelContext& ctx) {
  return opdef::transpose_perm(ctx.in(0).shape().size(), ctx.attrs->get_ints("perm", {}), "Transpose");
}

KernelDef::LayoutUse transpose_layout_use(const KernelContext& call) {
  if (call.in(0).dtype() != DType::f32) return {};
  switch (channels_perm(perm_of(call))) {
    case 1: return {1, false, false};   // reads a channels-last input
    case -1: return {0, true, false};   // writes a channels-last output
    default: return {};
  }
}

void transpose_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  Tensor& y = ctx.out(0);
  const std::vector<int64_t> perm = perm_of(ctx);
  const LayoutSides layout = activation_layout(*ctx.attrs);
  // The input stored channels-last and moved to channels-last, or the output stored
  // channels-last and moved back: the stored bytes are the result (the tags apply to both
  // shapes, so producer and consumer agree on the layout: dnn_layout.hpp).
  const int kind = channels_perm(perm);  // only ranks 3 to 5, which channels_last_tag covers
  const bool flat = (kind == 1 && layout.input(0)) || (kind == -1 && layout.output);
  if (flat && x.is_contiguous()) {
    if (y.nbytes() > 0) std::memcpy(y.raw_data(), x.raw_data(), y.nbytes());
    return;
  }
  copy_strided(x.permute(std::vector<int>(perm.begin(), perm.end())), y);
}

const bool transpose_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "Transpose";
  k.backend = DeviceType::cpu;
  k.dtypes = kAllTypes;
  k.fn = transpose_cpu;
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = transpose_layout_use;
  return k;
}());

}  // namespace
}  // namespace porta::cpu
