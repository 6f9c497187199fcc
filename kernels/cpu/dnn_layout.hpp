// porta cpu kernels — moving tensors between porta's plain layouts and the blocked layouts
// oneDNN picks for a primitive (format_tag::any), with cached reorder primitives.
#pragma once
#include "kernels/cpu/dnn_util.hpp"
#include "kernels/cpu/thread_policy.hpp"

namespace porta::cpu {

/// Channel-blocked tag for an activation (N x C x spatial...): nC[D]HW16c with AVX-512, else
/// nC[D]HW8c, when it has 1 to 3 spatial axes and its channels fill whole blocks (so the
/// blocked copy has exactly the plain tensor's size); format_tag::undef otherwise.
inline dnnl::memory::format_tag channel_blocked_tag(const Shape& s) {
  using tag = dnnl::memory::format_tag;
  static const int64_t block = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 16 : 8;
  if (s.size() < 3 || s.size() > 5 || s[1] % block != 0) return tag::undef;
  if (block == 16) return s.size() == 3 ? tag::nCw16c : s.size() == 4 ? tag::nChw16c : tag::nCdhw16c;
  return s.size() == 3 ? tag::nCw8c : s.size() == 4 ? tag::nChw8c : tag::nCdhw8c;
}

/// Channels-last tag for an activation (N x C x spatial...): nwc, nhwc or ndhwc for 1 to 3
/// spatial axes, format_tag::undef otherwise. It has exactly the plain tensor's size for every
/// channel count, which is why it is the layout cpu kernels keep values in between steps.
inline dnnl::memory::format_tag channels_last_tag(const Shape& s) {
  using tag = dnnl::memory::format_tag;
  if (s.size() < 3 || s.size() > 5) return tag::undef;
  return s.size() == 3 ? tag::nwc : s.size() == 4 ? tag::nhwc : tag::ndhwc;
}

/// The private layout the cpu Conv, pooling, per-channel Mul and global pooling kernels declare
/// (KernelDef::private_layout). Measured with oneDNN 2.6 at batch 1 on this project's machine
/// (AVX-512), 1x1, depthwise and dense 3x3 direct convs run as fast on nhwc as on nChw16c
/// (within 5% either way), and nhwc has no channel padding, so one layout serves every network;
/// Winograd (nChw16c only) reorders inside its step.
inline constexpr const char* kOneDnnChannelsLast = "onednn-channels-last";

/// Which operands of a cpu step are in kOneDnnChannelsLast (the attribute `porta_layout`, set
/// by the session compiler in runtime/plan_layouts.cpp). An operand in the layout holds the
/// tensor's logical NC[D]HW contents in channels_last_tag's layout when that tag applies to
/// its shape, and plain otherwise; producer and consumer apply the same rule to the same shape,
/// so they agree without telling each other.
inline LayoutSides activation_layout(const Attributes& a) {
  static const std::string kName = "porta_layout";
  if (!a.has(kName)) return {};
  return LayoutSides::parse(a.get_string(kName));
}

/// Descriptor of an activation as stored: channels-last when `in_layout` and the tag applies
/// to `s` (see channels_last_tag), else plain row-major.
inline dnnl::memory::desc stored_desc(const Shape& s, bool in_layout) {
  auto tag = in_layout ? channels_last_tag(s) : dnnl::memory::format_tag::undef;
  if (tag == dnnl::memory::format_tag::undef) return plain_desc(s, DType::f32);
  return dnnl::memory::desc(dims_of(s), dnnl::memory::data_type::f32, tag);
}

/// One of three scratch buffers of the calling thread (`which` 0 to 2), at least `bytes` long
/// and 64-byte aligned: where prepared calls reorder activations to and from a primitive's
/// layout (source, destination, a fused residual). Grows, never shrinks; valid until the
/// thread's next call with the same `which`.
inline void* reorder_scratch(int which, size_t bytes) {
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffers[3];
  Buffer& b = buffers[which % 3];
  if (b.size < bytes + 64) {
    b.data.reset(new char[bytes + 64]);
    b.size = bytes + 64;
  }
  auto p = reinterpret_cast<uintptr_t>(b.data.get());
  return reinterpret_cast<void*>((p + 63) & ~uintptr_t{63});
}

/// Cache key of a reorder between two descriptors: their raw bytes (exact, no hashing).
inline std::string reorder_key(const dnnl::memory::desc& a, const dnnl::memory::desc& b) {
  std::string k = "reorder|";
  k.append(reinterpret_cast<const char*>(&a.data), sizeof(dnnl_memory_desc_t));
  k.append(reinterpret_cast<const char*>(&b.data), sizeof(dnnl_memory_desc_t));
  return k;
}

/// Executes a reorder of `bytes` (source plus destination) under the thread count its own size
/// earns (thread_policy.hpp), not the count of the call it serves: the few-pixel reorders
/// around a channel-blocked conv otherwise pay a parallel region each at 2 threads.
inline void execute_reorder(const dnnl::primitive& r, const std::unordered_map<int, dnnl::memory>& args,
                            size_t bytes) {
  ThreadScope threads(threads_for(bytes));
  execute(r, args);
}

/// Memory in `want` holding the contents of `have` (the same memory when the descriptors
/// agree; else a scratch buffer filled by a cached reorder).
inline dnnl::memory reordered(const dnnl::memory& have, const dnnl::memory::desc& want) {
  if (have.get_desc() == want) return have;
  dnnl::memory out(want, engine());
  auto r = cached<dnnl::reorder>(reorder_key(have.get_desc(), want),
                                 [&] { return std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(have, out)); });
  execute_reorder(*r, {{DNNL_ARG_FROM, have}, {DNNL_ARG_TO, out}}, have.get_desc().get_size() + want.get_size());
  return out;
}

/// Copies `from` (any layout) into `to` (e.g. a plain output) with a cached reorder.
inline void reorder_into(const dnnl::memory& from, const dnnl::memory& to) {
  if (from.get_desc() == to.get_desc() && from.get_data_handle() == to.get_data_handle()) return;
  auto r = cached<dnnl::reorder>(reorder_key(from.get_desc(), to.get_desc()),
                                 [&] { return std::make_shared<dnnl::reorder>(dnnl::reorder::primitive_desc(from, to)); });
  execute_reorder(*r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}, from.get_desc().get_size() + to.get_desc().get_size());
}

/// Weights `w` (described by `plain` over its data) in the layout `want` a primitive asked
/// for. When `constant` (a session constant: its storage never changes while the session
/// lives, KernelContext::constant_inputs) the reordered copy is made once and cached, keyed on the
/// storage; otherwise it is reordered per call. `plain` itself when it already matches.
dnnl::memory weights_for(const Tensor& w, const dnnl::memory& plain, const dnnl::memory::desc& want, bool constant);

/// Declares (KernelContext::held) that a prepared state keeps constant input `input` as
/// `packed`, a reordered copy in the input's own dtype, so a session may free the input's bytes:
/// rebuilding them reorders `packed` back into `stored` (the layout the tensor has). Nothing
/// when `packed` is the stored memory itself or another dtype (a lossy copy cannot rebuild it).
void hold_packed(KernelContext& ctx, size_t input, const dnnl::memory& packed, const dnnl::memory::desc& stored);

}  // namespace porta::cpu
