// Conv and ConvTranspose on cpu: oneDNN convolution_forward / deconvolution_forward (f32, or
// bf16 inside the kernel with f32 accumulation and f32 activations: KernelDef::computes_in).
// Weights are described to oneDNN in ONNX's own layout (with group as a leading logical
// axis). Layout mode (PORTA_CONV_LAYOUT):
//   any   (default) — oneDNN picks its blocked layouts (brgconv/jit kernels); a plain input
//         is reordered in and a plain output reordered back per call. Inside a session,
//         activations between kernels that take oneDNN's channels-last layout arrive and leave
//         in it (kOneDnnChannelsLast, kernels/cpu/dnn_layout.hpp) and the primitive runs on it.
//         Weights that are session constants are reordered once and cached (keyed on their
//         storage, which a session never changes; KernelContext::constant_inputs); other
//         weights are reordered per call.
//   plain — activations and weights stay in NC[D]HW / OI[D]HW; the primitive (gemm-based)
//         works on them directly.
// Measured single-threaded on cnn's convs (3->16 @64x64, 16->32 @32x32, 32->64 @16x16, 3x3):
// plain 124 / 171 / 128 us, blocked with in/out reorders 60 / 103 / 88 us.
// Conv's porta-internal fused activation (`porta_activation` and its alpha/beta, set by graph
// fusion: Relu, Clip, LeakyRelu, Sigmoid, Tanh, HardSigmoid, HardSwish, Elu, Swish) becomes
// eltwise post-ops of the primitive (kernels/cpu/fused_activation.hpp), so the activation
// costs no pass of its own; Sigmoid and Swish, whose oneDNN post-ops are slow, run as porta's
// loop over the output right after the primitive, while it is still in cache.
// ConvTranspose's output_padding past the end padding is rows no input reaches: the primitive
// computes the reachable block and the rest is the bias.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>

#include "kernels/cpu/cache_size.hpp"
#include "kernels/cpu/conv_choice.hpp"
#include "kernels/cpu/conv_common.hpp"
#include "kernels/cpu/custom_vmath.hpp"
#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/fused_activation.hpp"
#include "kernels/cpu/vector_width.hpp"
#include "ops/window.hpp"

namespace porta::cpu {
namespace {

bool layout_any() {
  static const bool any = [] {
    const char* e = std::getenv("PORTA_CONV_LAYOUT");
    return !(e && std::string(e) == "plain");
  }();
  return any;
}

// Logical weights for oneDNN: {[G,] OC/G, IC/G, k...} over ONNX's contiguous W.
// Conv W is (M, C/G, k...): contiguous in that order. ConvTranspose W is (C, M/G, k...), so
// the IC/G and OC/G axes swap strides.
dnnl::memory::desc weights_desc(const Shape& w, int64_t group, bool transposed, DType t = DType::f32) {
  Shape k(w.begin() + 2, w.end());
  int64_t ksize = shape_numel(k);
  int64_t ocg = transposed ? w[1] : w[0] / group, icg = transposed ? w[0] / group : w[1];
  Shape dims{ocg, icg};
  std::vector<int64_t> strides = transposed ? std::vector<int64_t>{ksize, ocg * ksize}
                                            : std::vector<int64_t>{icg * ksize, ksize};
  if (group > 1) {
    dims.insert(dims.begin(), group);
    strides.insert(strides.begin(), ocg * icg * ksize);
  }
  std::vector<int64_t> ks = contiguous_strides(k);
  dims.insert(dims.end(), k.begin(), k.end());
  strides.insert(strides.end(), ks.begin(), ks.end());
  return strided_desc(dims, strides, t);
}

// Layout of a Conv activation (input or output) in `any` mode when both sides are stored plain
// (an eager call, or a session value that a plain-only kernel reads). With format_tag::any
// oneDNN 2.6 picks channels-last (brgconv) for f32; channel-blocked nC[D]HW16c (8c without AVX-512) runs its direct jit
// kernel instead, and the reorders to and from porta's NC[D]HW are a cheap per-block
// transpose rather than a full channels-last transpose. Measured single-threaded on cnn's
// three convs (16->32 @32x32 etc.): model 290 -> 270 us, the output reorder of a 32x32x32
// activation 19 -> 7 us. Applies per side when its channels fill whole blocks and group == 1;
// a side that does not (e.g. a 3-channel image input: oneDNN's first-layer kernel reads it
// plain and writes blocked) and grouped convs keep `any`. When either side is stored
// channels-last the primitive runs channels-last on both sides (oneDNN has no fast kernel for
// mixed layouts: a plain-to-nhwc or nhwc-to-nChw16c conv is its reference loop).
dnnl::memory::format_tag activation_tag(const Shape& s, int64_t group) {
  auto blocked = channel_blocked_tag(s);
  return group != 1 || blocked == dnnl::memory::format_tag::undef ? dnnl::memory::format_tag::any : blocked;
}

// The binary post-op argument of a fused residual: the first post-op (the activation's follow).
constexpr int kResidualArg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1;

dnnl::memory::format_tag plain_tag(size_t rank) {
  using tag = dnnl::memory::format_tag;
  return rank == 3 ? tag::abc : rank == 4 ? tag::abcd : tag::abcde;
}

// Appends the eltwise post-ops of `from` (fused_post_ops builds only those) to `to`.
void append_post_ops(dnnl::post_ops& to, const dnnl::post_ops& from) {
  for (int i = 0; i < from.len(); ++i) {
    float scale = 1.f, alpha = 0.f, beta = 0.f;
    dnnl::algorithm alg;
    from.get_params_eltwise(i, scale, alg, alpha, beta);
    to.append_eltwise(scale, alg, alpha, beta);
  }
}

template <typename P>
struct WindowPrimitive {
  P prim;
  typename P::primitive_desc pd;
  bool residual_post_op = false;  // a fused residual is added by the primitive (else after it)
  bool winograd = false;
  bool low_refused = false;  // oneDNN has no implementation in the low format here (no AVX-512)
};

// The primitive of a conv (or deconv) from x to y: the layouts, the algorithm and the post-ops
// chosen as the comments above say. `row_block`: a row block of a Winograd conv (below), which
// tries Winograd whatever its rows and takes its scratchpad as an argument instead of sharing
// its creating thread's (row blocks run on other threads).
template <typename P>
std::shared_ptr<WindowPrimitive<P>> make_window_primitive(const char* op, const Shape& xs, const Shape& ws,
                                                          const Tensor* bias, const Shape& y_shape, int64_t group,
                                                          const opdef::WindowGeometry& g,
                                                          const std::vector<int64_t>& pad_end, bool transposed,
                                                          const Attributes* fused, LayoutSides layout, bool residual,
                                                          DType compute, bool row_block = false) {
  const bool any = layout_any();
  std::vector<int64_t> dil;
  for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps
  auto r = std::make_shared<WindowPrimitive<P>>();
  auto tag = dnnl::memory::format_tag::any;
  auto f32 = dnnl::memory::data_type::f32;
  auto ct = dnnl_type(compute);  // the source's and the weights' type in the primitive
  // oneDNN's Winograd is f32 only.
  bool wino_candidate =
      row_block || (compute == DType::f32 && !transposed && any && use_winograd(xs, ws, group, g));
  bool channels_last = !transposed && !wino_candidate && (layout.input(0) || layout.output) &&
                       !small_blocked(xs, y_shape, group, g) &&
                       !image_to_blocked(xs, y_shape, group, layout, residual);
  auto src_tag = transposed ? tag : channels_last ? channels_last_tag(xs) : activation_tag(xs, group);
  auto dst_tag = transposed ? tag : channels_last ? channels_last_tag(y_shape) : activation_tag(y_shape, group);
  // A fused residual is a binary post-op over the destination, except for Winograd (which
  // takes no binary post-op: the sum and the activation then follow the primitive). The
  // post-op's layout must be concrete, so `any` (grouped convs between plain steps, or an
  // output whose channels do not fill whole blocks) becomes y's stored layout. A
  // channel-blocked input with a plain output is oneDNN's reference loop (lraspp's
  // high_classifier, 128 -> 21 channels over 8x8 pixels with the Add fused: 5 ms against 46 us),
  // so then both sides run channels-last instead.
  r->residual_post_op = residual && !wino_candidate;
  if (r->residual_post_op && dst_tag == tag) {
    auto y_last = channels_last_tag(y_shape), x_last = channels_last_tag(xs);
    bool blocked_src = src_tag != tag && src_tag == channel_blocked_tag(xs);
    if (blocked_src && y_last != dnnl::memory::format_tag::undef && x_last != dnnl::memory::format_tag::undef) {
      src_tag = x_last;
      dst_tag = y_last;
    } else {
      dst_tag = layout.output && y_last != dnnl::memory::format_tag::undef ? y_last : plain_tag(y_shape.size());
    }
  }
  auto src = any ? dnnl::memory::desc(dims_of(xs), ct, src_tag) : plain_desc(xs, compute);
  auto dst = any ? dnnl::memory::desc(dims_of(y_shape), f32, dst_tag) : plain_desc(y_shape, DType::f32);
  auto wd = weights_desc(ws, group, transposed, compute);
  if (any) wd = dnnl::memory::desc(wd.dims(), ct, tag);
  auto bd = bias ? plain_desc(bias->shape(), DType::f32) : dnnl::memory::desc();
  try {
    dnnl::primitive_attr attr;
    if (row_block) attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (r->residual_post_op) ops.append_binary(dnnl::algorithm::binary_add, dst);
    if (fused && (!residual || r->residual_post_op)) append_post_ops(ops, fused_post_ops(*fused));
    if (ops.len() > 0) attr.set_post_ops(ops);
    auto make = [&](dnnl::algorithm alg) {
      typename P::desc d(dnnl::prop_kind::forward_inference, alg, src, wd, bd, dst, dims_of(g.strides), dims_of(dil),
                         dims_of(g.pad_begin), dims_of(pad_end));
      r->pd = typename P::primitive_desc(d, attr, engine());
    };
    if (wino_candidate) {
      try {
        make(dnnl::algorithm::convolution_winograd);
        r->winograd = true;
      } catch (const dnnl::error&) {  // no Winograd kernel for this shape: direct below
      }
    }
    if (!r->winograd)
      make(transposed ? dnnl::algorithm::deconvolution_direct : dnnl::algorithm::convolution_direct);
    // oneDNN 2.6's gemm-based convolution (im2col; what a dilated conv gets without AVX-512)
    // adds a binary post-op at the wrong elements when its tensors are channels-last: a 3x3
    // at dilation 4 over channels-last 8x8 with a fused residual was off by 51% (relative),
    // and by 97% in 1-D. There the sum and the activation follow the primitive, as for
    // Winograd.
    if (r->residual_post_op && std::string(r->pd.impl_info_str()).find("gemm") != std::string::npos) {
      r->residual_post_op = false;
      attr = dnnl::primitive_attr();  // (set_post_ops with an empty list keeps the old ones in 2.6)
      if (row_block) attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      make(dnnl::algorithm::convolution_direct);
    }
    r->prim = P(r->pd);
  } catch (const dnnl::error& e) {
    if (compute != DType::f32) {  // computed in f32 by the caller (and remembered with the primitive)
      r->low_refused = true;
      return r;
    }
    throw BackendError(
        str("[", op, "] oneDNN refused X ", shape_str(xs), ", W ", shape_str(ws), ": ", e.what()));
  }
  return r;
}

// One primitive of a prepared Conv call over a block of its output rows (all of them unless
// the call runs as row blocks), with its memory objects and the reorders around it, so a call
// only rebinds the data pointers and executes. Measured on squeezenet1_1 at 64x64 (26 small
// convs), building keys, looking up caches and creating memory objects per call was about a
// third of the model's time on one thread.
struct ConvPart {
  int64_t x_offset = 0, y_offset = 0;  // elements from the call's x, and from y and the residual
  int64_t y_numel = 0;
  dnnl::primitive prim;
  dnnl::memory src_stored, src, dst_stored, dst;
  bool reorder_src = false, reorder_dst = false;
  dnnl::reorder to_src, from_dst;
  std::unordered_map<int, dnnl::memory> args, src_args, dst_args;
  // A fused residual (Conv's porta_residual): the binary post-op's operand, reordered into the
  // primitive's destination layout when stored otherwise; or, with residual_after, added with
  // the activation after the primitive (reordered into y's stored layout when needed).
  bool has_residual = false, reorder_residual = false, residual_after = false;
  opdef::FusedActivation activation;  // the whole activation, for residual_after
  dnnl::memory residual_stored, residual;
  dnnl::reorder to_residual;
  std::unordered_map<int, dnnl::memory> residual_args;
  opdef::FusedActivation after;  // applied over y after the primitive
  std::shared_ptr<char[]> scratchpad;  // a row block's own scratchpad (user_scratchpad)

  void run(const float* x, float* y, const float* r) {
    x += x_offset;
    y += y_offset;
    if (r) r += y_offset;
    src_stored.set_data_handle(const_cast<float*>(x));
    dst_stored.set_data_handle(y);
    // The reorders' scratch is the thread's (shared by every step), not the step's own.
    if (reorder_src) src.set_data_handle(reorder_scratch(0, src.get_desc().get_size()));
    if (reorder_dst) dst.set_data_handle(reorder_scratch(1, dst.get_desc().get_size()));
    if (has_residual) {
      residual_stored.set_data_handle(const_cast<float*>(r));
      if (reorder_residual) {
        residual.set_data_handle(reorder_scratch(2, residual.get_desc().get_size()));
        execute_reorder(to_residual, residual_args, 2 * residual.get_desc().get_size());
      }
    }
    if (reorder_src) execute_reorder(to_src, src_args, src_stored.get_desc().get_size() + src.get_desc().get_size());
    execute(prim, args);
    if (reorder_dst) execute_reorder(from_dst, dst_args, dst.get_desc().get_size() + dst_stored.get_desc().get_size());
    if (residual_after)
      add_residual(y, static_cast<const float*>(residual.get_data_handle()), y_numel, activation);
    else
      apply_activation(after, y, y_numel);
  }
};

// A part over the primitive `p` between x and y stored as `x_stored` and `y_stored` (and a
// residual stored as `residual_stored` when the conv has one).
template <typename P>
ConvPart make_part(const WindowPrimitive<P>& p, const dnnl::memory::desc& x_stored, const dnnl::memory::desc& y_stored,
                   const dnnl::memory& wts, const Tensor* bias, const dnnl::memory::desc* residual_stored,
                   const opdef::FusedActivation& after, const opdef::FusedActivation& whole, bool user_scratchpad) {
  ConvPart pc;
  pc.prim = p.prim;
  pc.src_stored = dnnl::memory(x_stored, engine(), nullptr);
  pc.reorder_src = x_stored != p.pd.src_desc();
  pc.src = pc.reorder_src ? dnnl::memory(p.pd.src_desc(), engine(), nullptr) : pc.src_stored;
  pc.dst_stored = dnnl::memory(y_stored, engine(), nullptr);
  pc.reorder_dst = y_stored != p.pd.dst_desc();
  pc.dst = pc.reorder_dst ? dnnl::memory(p.pd.dst_desc(), engine(), nullptr) : pc.dst_stored;
  if (pc.reorder_src) pc.to_src = dnnl::reorder(dnnl::reorder::primitive_desc(pc.src_stored, pc.src));
  if (pc.reorder_dst) pc.from_dst = dnnl::reorder(dnnl::reorder::primitive_desc(pc.dst, pc.dst_stored));
  pc.args = {{DNNL_ARG_SRC, pc.src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, pc.dst}};
  if (bias) pc.args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.pd.bias_desc(), engine(), bias->raw_data()));
  if (user_scratchpad) {
    const dnnl::memory::desc sd = p.pd.scratchpad_desc();
    const size_t bytes = sd.get_size();
    pc.scratchpad.reset(new char[bytes + 64]);
    auto at = reinterpret_cast<uintptr_t>(pc.scratchpad.get());
    pc.args.emplace(DNNL_ARG_SCRATCHPAD,
                    dnnl::memory(sd, engine(), reinterpret_cast<void*>((at + 63) & ~uintptr_t{63})));
  }
  if (residual_stored) {
    const dnnl::memory::desc want = p.residual_post_op ? p.pd.dst_desc() : y_stored;
    pc.has_residual = true;
    pc.residual_stored = dnnl::memory(*residual_stored, engine(), nullptr);
    pc.residual_after = !p.residual_post_op;
    pc.activation = whole;
    pc.reorder_residual = *residual_stored != want;
    pc.residual = pc.reorder_residual ? dnnl::memory(want, engine(), nullptr) : pc.residual_stored;
    if (pc.reorder_residual) {
      pc.to_residual = dnnl::reorder(dnnl::reorder::primitive_desc(pc.residual_stored, pc.residual));
      pc.residual_args = {{DNNL_ARG_FROM, pc.residual_stored}, {DNNL_ARG_TO, pc.residual}};
    }
    if (p.residual_post_op) pc.args.emplace(kResidualArg, pc.residual);
  }
  pc.src_args = {{DNNL_ARG_FROM, pc.src_stored}, {DNNL_ARG_TO, pc.src}};
  pc.dst_args = {{DNNL_ARG_FROM, pc.dst}, {DNNL_ARG_TO, pc.dst_stored}};
  pc.after = after;
  pc.y_numel = shape_numel(y_stored.dims());
  return pc;
}

std::atomic<uint64_t> row_block_runs{0};
std::atomic<uint64_t> merged_group_runs{0};

// A Conv call prepared once per session step (KernelContext::state): one part, or row blocks.
struct PreparedConv {
  Shape x_shape, y_shape;
  // The weights by identity (storage and offset): a session may have released their bytes.
  const Storage* weights = nullptr;
  int64_t weights_offset = 0;
  const void* bias = nullptr;
  std::vector<ConvPart> parts;
  bool finite_x_only = false;  // merged groups (group_merge): an x with an infinity or NaN runs unmerged

  bool fits(const Tensor& x, const Tensor& w, const Tensor* b, const Shape& ys) const {
    return x.shape() == x_shape && ys == y_shape && w.storage().get() == weights && w.offset() == weights_offset &&
           (b ? b->raw_data() : nullptr) == bias;
  }
  void recognise(const Tensor& w) {
    weights = w.storage().get();
    weights_offset = w.offset();
  }
  void run(const void* xv, void* yv, const void* rv) {
    const auto* x = static_cast<const float*>(xv);
    auto* y = static_cast<float*>(yv);
    const auto* r = static_cast<const float*>(rv);
    const int n = static_cast<int>(parts.size());
    const int threads = std::min(n, call_thread_budget());
    if (threads <= 1) {
      for (ConvPart& part : parts) part.run(x, y, r);
      return;
    }
    row_block_runs.fetch_add(1, std::memory_order_relaxed);
    std::exception_ptr error;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int i = 0; i < n; ++i) {
      try {
        parts[static_cast<size_t>(i)].run(x, y, r);
      } catch (...) {
#pragma omp critical(porta_conv_rows_error)
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  }
};

// Winograd convs run as row blocks, one per thread of the call's budget (call_thread_budget),
// each block a primitive of its own over its output rows and the input rows they read: oneDNN
// splits one Winograd primitive over threads poorly at these sizes (AMD EPYC Zen 5, f32, 2
// threads, in-cache loop of the primitive and its nhwc<->nChw16c reorders: 32->64 channels over
// 16x16 pixels 25.6 us on one thread, 29.5 us on two, 15.1 us as two row blocks; 64->64 over
// 32x32 225 / 130 / 88 us; 16->64 over 15x15 15.4 / 14.2 / 12.8 us). Every block reads all the
// transformed weights, so convs whose transformed weights pass kRowBlockMaxWeights keep
// oneDNN's split (256->256 over 8x8, 9.4 MB: 92 us on two threads, 172 us as blocks). A block
// has at least one Winograd tile row (4 output rows). Only a session step whose x, y (and
// residual) are stored channels-last at batch 1 splits: there a block of rows is a contiguous
// slice of each.
// PORTA_CONV_ROW_BLOCKS=0 keeps every conv one primitive.
constexpr size_t kRowBlockMaxWeights = size_t{2} << 20;
constexpr int64_t kRowBlockMinRows = 3;

size_t l2_bytes() {
  static const size_t bytes = [] {
    const int64_t v = cache_bytes(2);
    return v > 0 ? static_cast<size_t>(v) : size_t{1} << 20;
  }();
  return bytes;
}

bool row_blocks_enabled() {
  static const bool enabled = [] {
    const char* e = std::getenv("PORTA_CONV_ROW_BLOCKS");
    return !(e && std::string(e) == "0");
  }();
  return enabled;
}

template <typename P>
bool prepare_row_blocks(PreparedConv& pc, const WindowPrimitive<P>& whole_conv, const char* op, const Shape& xs,
                        const Tensor& w, const Tensor* bias, const Shape& ys, const opdef::WindowGeometry& g, const Attributes* fused, bool residual,
                        const opdef::FusedActivation& after, const opdef::FusedActivation& whole) {
  const int blocks = static_cast<int>(std::min<int64_t>(call_thread_budget(), ys[2] / kRowBlockMinRows));
  if (blocks < 2) return false;
  const int64_t in_rows = xs[2], in_cols = xs[3], channels = xs[1], out_cols = ys[3], out_channels = ys[1];
  const int64_t stride = g.strides[0], reach = (g.kernel[0] - 1) * g.dilations[0];
  const LayoutSides all_last{residual ? 9u : 1u, true};  // x, y (and the residual) channels-last
  std::vector<ConvPart> parts;
  const std::string impl = whole_conv.pd.impl_info_str();
  for (int b = 0; b < blocks; ++b) {
    const int64_t r0 = ys[2] * b / blocks, r1 = ys[2] * (b + 1) / blocks;
    const int64_t first = r0 * stride - g.pad_begin[0], last = (r1 - 1) * stride - g.pad_begin[0] + reach;
    const int64_t from = std::max<int64_t>(0, first), to = std::min(in_rows - 1, last);
    if (to < from) return false;  // a block that reads only padding
    opdef::WindowGeometry gb = g;
    gb.in[0] = to - from + 1;
    gb.out[0] = r1 - r0;
    gb.pad_begin[0] = from - first;
    gb.pad_end[0] = last - to;
    const Shape xb{1, channels, gb.in[0], in_cols}, yb{1, out_channels, gb.out[0], out_cols};
    std::shared_ptr<WindowPrimitive<P>> p;
    try {
      p = make_window_primitive<P>(op, xb, w.shape(), bias, yb, 1, gb, gb.pad_end, false, fused, all_last, residual,
                                   DType::f32, true);
    } catch (const Error&) {
      return false;  // no primitive for a block: the call stays whole
    }
    // oneDNN picks its Winograd kernel by shape: F(2x2) tiles (jit_fp32_wino_2x3) only for
    // evenly padded maps, so a block of such a conv runs F(4x4) (jit_wino_4x3), whose
    // transformed weights are 2.25x as large; each block streams them. Such a block is kept
    // while its weights fit in half the core's L2 (squeezenet1_1's 16->64 3x3 over 15x15, 2
    // threads: 22 -> 11.5 us); beyond, it was slower than the whole conv (inception_v3's 96->96
    // over 7x7, 1.3 MB: 31 -> 68 us; densenet121's 128->32 over 16x16, 590 KB: 37 -> 40 us).
    const bool same_kernel = impl == p->pd.impl_info_str();
    if (!p->winograd || !(same_kernel || p->pd.weights_desc().get_size() <= l2_bytes() / 2)) return false;
    const dnnl::memory wts = weights_for(w, wrap_ptr(weights_desc(w.shape(), 1, false), w.raw_data()),
                                         p->pd.weights_desc(), true);
    const dnnl::memory::desc y_stored = stored_desc(yb, true);
    ConvPart part = make_part(*p, stored_desc(xb, true), y_stored, wts, bias, residual ? &y_stored : nullptr, after,
                              whole, true);
    part.x_offset = from * in_cols * channels;
    part.y_offset = r0 * out_cols * out_channels;
    parts.push_back(std::move(part));
  }
  pc.parts = std::move(parts);
  return true;
}

// Runs a conv (or deconv) primitive from x to a dense y of shape `y_shape`. With `prepared`
// (a session step whose weights are constant) it also leaves the call prepared there.
template <typename P>
void run_window(const char* op, const Tensor& x, const Tensor& w, const Tensor* bias, void* y,
                const Shape& y_shape, int64_t group, const opdef::WindowGeometry& g,
                const std::vector<int64_t>& pad_end, bool transposed, bool weights_constant, const Attributes* fused = nullptr,
                LayoutSides layout = {}, std::shared_ptr<void>* prepared = nullptr, const Tensor* residual = nullptr,
                DType compute = DType::f32) {
  std::vector<int64_t> dil;
  for (int64_t d : g.dilations) dil.push_back(d - 1);
  // The thread budget: use_winograd's choice follows it.
  auto key = dnn_key(op, x.shape(), w.shape(), y_shape, group, g.strides, dil, g.pad_begin, pad_end,
                     bias != nullptr, layout_any(), fused ? fused_activation_key(*fused) : std::string(),
                     layout.input(0) || layout.output, residual != nullptr, layout.output, compute,
                     call_thread_budget());
  auto p = cached<WindowPrimitive<P>>(key, [&] {
    return make_window_primitive<P>(op, x.shape(), w.shape(), bias, y_shape, group, g, pad_end, transposed, fused,
                                    layout, residual != nullptr, compute);
  });
  // A CPU where oneDNN has no bf16 convolution (bf16 needs AVX-512) computes the call in f32,
  // as MatMul does: the session asked for speed, and f32 is the more accurate answer.
  if (p->low_refused)
    return run_window<P>(op, x, w, bias, y, y_shape, group, g, pad_end, transposed, weights_constant, fused, layout,
                         prepared, residual, DType::f32);
  // x and y as the session stores them (plain, or channels-last between layout-aware
  // kernels): a side already in the primitive's layout needs no reorder.
  dnnl::memory src = reordered(wrap_ptr(stored_desc(x.shape(), layout.input(0)), x.raw_data()), p->pd.src_desc());
  dnnl::memory wts = weights_for(w, wrap_ptr(weights_desc(w.shape(), group, transposed), w.raw_data()),
                                 p->pd.weights_desc(), weights_constant);
  dnnl::memory stored_dst = wrap_ptr(stored_desc(y_shape, layout.output), y);
  dnnl::memory dst = p->pd.dst_desc() == stored_dst.get_desc() ? stored_dst : dnnl::memory(p->pd.dst_desc(), engine());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wts}, {DNNL_ARG_DST, dst}};
  if (bias) args.emplace(DNNL_ARG_BIAS, wrap_ptr(p->pd.bias_desc(), bias->raw_data()));
  const dnnl::memory::desc residual_stored_desc =
      residual ? stored_desc(y_shape, layout.input(3)) : dnnl::memory::desc();
  // The residual in the layout it is added in: the primitive's destination for the post-op,
  // y's stored layout when added after.
  const dnnl::memory::desc residual_want = !residual                ? dnnl::memory::desc()
                                           : p->residual_post_op ? p->pd.dst_desc()
                                                                   : stored_dst.get_desc();
  dnnl::memory residual_mem;
  if (residual) residual_mem = reordered(wrap_ptr(residual_stored_desc, residual->raw_data()), residual_want);
  if (residual && p->residual_post_op) args.emplace(kResidualArg, residual_mem);
  execute(p->prim, args);
  reorder_into(dst, stored_dst);
  const opdef::FusedActivation after = fused ? activation_after_primitive(*fused) : opdef::FusedActivation{};
  const opdef::FusedActivation whole = fused ? opdef::parse_fused_activation(*fused) : opdef::FusedActivation{};
  if (residual && !p->residual_post_op)
    add_residual(static_cast<float*>(y), static_cast<const float*>(residual_mem.get_data_handle()), shape_numel(y_shape),
                 whole);
  else
    apply_activation(after, static_cast<float*>(y), shape_numel(y_shape));
  if (!prepared || !weights_constant) return;
  auto pc = std::make_shared<PreparedConv>();
  pc->x_shape = x.shape();
  pc->y_shape = y_shape;
  pc->recognise(w);
  pc->bias = bias ? bias->raw_data() : nullptr;
  const bool rows_contiguous = !transposed && x.rank() == 4 && x.dim(0) == 1 && layout.input(0) && layout.output &&
                               (!residual || layout.input(3));
  const bool split = rows_contiguous && p->winograd && row_blocks_enabled() &&
                     p->pd.weights_desc().get_size() <= kRowBlockMaxWeights &&
                     prepare_row_blocks<P>(*pc, *p, op, x.shape(), w, bias, y_shape, g, fused, residual != nullptr, after,
                                           whole);
  if (!split)
    pc->parts.push_back(make_part(*p, stored_desc(x.shape(), layout.input(0)), stored_dst.get_desc(), wts, bias,
                                  residual ? &residual_stored_desc : nullptr, after, whole, false));
  *prepared = pc;
}

bool weights_constant(const KernelContext& ctx) { return ctx.is_constant_input(1); }

// A grouped conv of 4 input channels per group on an AVX2 CPU (resnext50's first stage: 32
// groups of 4 channels): oneDNN 2.6's AVX2 jit kernels need 8 channels per group, so it runs
// im2col and a GEMM per group there. Pairs of groups merged into groups of 8 channels, with
// block-diagonal weights (the zeros between a pair's two groups made once per session), run on
// its jit kernel instead: twice the multiply-adds in under a third of the time (resnext50's
// 128-channel 3x3 over 16x16 at one thread: ~500 -> ~145 us, ORT ~190). 2 when the conv merges so.
int64_t group_merge(const Shape& w, int64_t group, bool constant) {
  if (!constant || group < 2 || group % 2 != 0 || vector_bytes() != 32 || w.size() < 3) return 1;
  const int64_t in_per_group = w[1], out_per_group = w[0] / group;
  return in_per_group == 4 && out_per_group % 4 == 0 ? 2 : 1;
}

// W [OC, C/G, k...] as the weights of G/2 groups of twice the input channels: output channel
// o (of group j) takes its own weights at input channels (j % 2) * C/G.., zeros at the others.
Tensor merged_group_weights(const Tensor& w, int64_t group) {
  const int64_t oc = w.dim(0), cin = w.dim(1), out_per_group = oc / group;
  const int64_t taps = cin == 0 ? 0 : w.numel() / (oc * cin);
  Shape shape = w.shape();
  shape[1] = 2 * cin;
  Tensor merged = Tensor::zeros(shape, DType::f32);
  const Tensor src = w.contiguous();
  const float* from = src.data<float>();
  float* to = merged.data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    const int64_t half = (o / out_per_group) % 2;
    std::memcpy(to + (o * 2 * cin + half * cin) * taps, from + o * cin * taps,
                static_cast<size_t>(cin * taps) * sizeof(float));
  }
  return merged;
}

// Whether every element of x is finite: merged groups multiply the other group's inputs by
// zero, and 0 * inf is NaN.
bool all_finite(const Tensor& x) {
  const float* p = x.data<float>();
  const int64_t n = x.numel();
  float zero = 0;
#pragma omp simd reduction(+ : zero)
  for (int64_t i = 0; i < n; ++i) zero += p[i] * 0.0f;
  return zero == 0;
}

// A conv whose weights are a session constant runs without the kernel taps that read only
// padding (opdef::input_taps): weights sliced once (cached on their storage), pads reduced by
// what was cut, so it stops streaming weights that multiply zeros. inception_v3 at 64x64 has
// 3x3 convs with 448x384 channels over 1x1 maps: 676 us each for 6.2 MB of weights, of which
// the centre tap's ninth matters.
void conv_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  if (x.dim(1) == 0) {  // no input channels (oneDNN refuses them): every output is Act(bias + residual)
    Shape bshape(y.rank(), 1);
    bshape[1] = y.dim(1);
    Tensor plain = Tensor::zeros(y.shape(), DType::f32);  // its own storage: written below
    if (ctx.has_input(2)) plain.copy_(ctx.in(2).reshape(bshape).expand(y.shape()));
    // stored as the session keeps y (channels-last between layout-aware kernels)
    const LayoutSides layout = activation_layout(*ctx.attrs);
    if (ctx.has_input(3)) {  // plus the fused residual, brought into the plain layout first
      Tensor r = Tensor::empty(y.shape(), DType::f32);
      reorder_into(wrap_ptr(stored_desc(y.shape(), layout.input(3)), ctx.in(3).raw_data()),
                   wrap_ptr(plain_desc(y.shape(), DType::f32), r.raw_data()));
      float* p = plain.data<float>();
      const float* q = r.data<float>();
      for (int64_t i = 0; i < plain.numel(); ++i) p[i] += q[i];
    }
    if (const opdef::FusedActivation act = opdef::parse_fused_activation(*ctx.attrs); act.active()) {
      float* p = plain.data<float>();
      for (int64_t i = 0; i < plain.numel(); ++i) p[i] = static_cast<float>(act(p[i]));
    }
    reorder_into(wrap_ptr(plain_desc(y.shape(), DType::f32), plain.raw_data()),
                 wrap_ptr(stored_desc(y.shape(), layout.output), y.raw_data()));
    return;
  }
  const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  const Tensor* residual = ctx.has_input(3) ? &ctx.in(3) : nullptr;
  auto* prepared = static_cast<PreparedConv*>(ctx.state.get());
  if (prepared && prepared->fits(x, w, bias, y.shape()) && (!prepared->finite_x_only || all_finite(x))) {
    if (prepared->finite_x_only) merged_group_runs.fetch_add(1, std::memory_order_relaxed);
    return prepared->run(x.raw_data(), y.raw_data(), residual ? residual->raw_data() : nullptr);
  }
  Shape k(w.shape().begin() + 2, w.shape().end());
  opdef::WindowGeometry g = opdef::window_geometry("Conv", x.shape(), k, *ctx.attrs);
  const bool constant = weights_constant(ctx);
  std::optional<opdef::TapRange> crop = constant ? opdef::input_taps(g) : std::nullopt;
  std::shared_ptr<const Tensor> cut_w;
  if (crop) {
    std::string what = "conv-taps";
    for (size_t i = 0; i < g.spatial(); ++i) what += str("|", crop->first[i], ":", crop->last[i]);
    cut_w = std::static_pointer_cast<const Tensor>(cached_derived(w, what, [&] {
      Tensor view = w;
      for (size_t i = 0; i < g.spatial(); ++i)
        view = view.slice(static_cast<int>(i + 2), crop->first[i], crop->last[i] + 1);
      return std::static_pointer_cast<const void>(std::make_shared<const Tensor>(view.contiguous()));
    }));
    for (size_t i = 0; i < g.spatial(); ++i) {
      g.pad_begin[i] -= crop->first[i] * g.dilations[i];
      g.pad_end[i] -= (g.kernel[i] - 1 - crop->last[i]) * g.dilations[i];
      g.kernel[i] = crop->last[i] - crop->first[i] + 1;
    }
  }
  const int64_t group = ctx.attrs->get_int("group");
  int64_t merge = compute_format(ctx) == DType::f32 ? group_merge(w.shape(), group, constant) : 1;
  // An x with an infinity or NaN runs the groups as they are, unprepared: the prepared state
  // stays the merged one for the calls that follow.
  const bool unmerged = merge > 1 && !all_finite(x);
  if (unmerged) merge = 1;
  std::shared_ptr<const Tensor> merged_w;
  if (merge > 1) {
    std::string what = "conv-merged-groups";
    if (crop)
      for (size_t i = 0; i < g.spatial(); ++i) what += str("|", crop->first[i], ":", crop->last[i]);
    merged_w = std::static_pointer_cast<const Tensor>(cached_derived(w, what, [&] {
      return std::static_pointer_cast<const void>(
          std::make_shared<const Tensor>(merged_group_weights(cut_w ? *cut_w : w, group)));
    }));
  }
  if (merged_w) merged_group_runs.fetch_add(1, std::memory_order_relaxed);
  const void* before = ctx.state.get();
  run_window<dnnl::convolution_forward>("Conv", x, merged_w ? *merged_w : cut_w ? *cut_w : w, bias, y.raw_data(),
                                         y.shape(), group / merge, g, g.pad_end, false, constant, ctx.attrs,
                                         activation_layout(*ctx.attrs), unmerged ? nullptr : &ctx.state, residual,
                                         compute_format(ctx));
  if (unmerged) return;
  auto* pc = static_cast<PreparedConv*>(ctx.state.get());
  if (!pc || pc == before) return;
  pc->finite_x_only = merge > 1;
  // The prepared call recognises the step by the weights it is given, not their cut copy; it
  // holds them (KernelContext::held) when a part keeps them whole in the same dtype and in a
  // layout oneDNN can reorder back (not Winograd's transformed weights, nor a cut or bf16 copy).
  pc->recognise(w);
  ctx.held.clear();
  if (!cut_w && !merged_w && !pc->parts.empty())
    hold_packed(ctx, 1, pc->parts[0].args.at(DNNL_ARG_WEIGHTS), weights_desc(w.shape(), ctx.attrs->get_int("group"), false));
}

void conv_transpose_cpu(KernelContext& ctx) {
  const Tensor &x = ctx.in(0), &w = ctx.in(1);
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  int64_t group = ctx.attrs->get_int("group");
  const DType compute = compute_format(ctx);
  Shape k(w.shape().begin() + 2, w.shape().end());
  std::vector<int64_t> opad;
  opdef::WindowGeometry g = opdef::transposed_geometry("ConvTranspose", x.shape(), k, *ctx.attrs, &opad);
  const Tensor* bias = ctx.has_input(2) ? &ctx.in(2) : nullptr;
  Shape bshape(y.rank(), 1);
  bshape[1] = y.dim(1);
  auto fill_bias = [&] {
    if (bias) y.copy_(bias->reshape(bshape).expand(y.shape()));
    else std::memset(y.raw_data(), 0, y.nbytes());
  };
  if (x.dim(1) == 0) {  // no input channels (oneDNN refuses them): every output is the bias
    fill_bias();
    return;
  }
  // oneDNN's deconvolution has no output_padding: it is less end padding. Where that would go
  // negative, the outputs past the reachable extent receive only the bias.
  std::vector<int64_t> pad_end(g.spatial());
  Shape reach = y.shape();
  bool partial = false;
  for (size_t i = 0; i < g.spatial(); ++i) {
    pad_end[i] = std::max<int64_t>(0, g.pad_end[i] - opad[i]);
    int64_t full = g.strides[i] * (g.in[i] - 1) + (g.kernel[i] - 1) * g.dilations[i] + 1;
    reach[i + 2] = full - g.pad_begin[i] - pad_end[i];
    partial |= reach[i + 2] != y.shape()[i + 2];
  }
  if (!partial) {
    run_window<dnnl::deconvolution_forward>("ConvTranspose", x, w, bias, y.raw_data(), y.shape(), group, g,
                                            pad_end, true, weights_constant(ctx), nullptr, {}, nullptr, nullptr, compute);
    return;
  }
  Tensor block = Tensor::empty(reach, DType::f32);
  bool reach_empty = block.numel() == 0;
  if (!reach_empty)
    run_window<dnnl::deconvolution_forward>("ConvTranspose", x, w, bias, block.raw_data(), reach, group, g,
                                            pad_end, true, weights_constant(ctx), nullptr, {}, nullptr, nullptr, compute);
  fill_bias();
  Tensor view = y;
  for (size_t i = 0; i < g.spatial(); ++i) view = view.slice(static_cast<int>(i + 2), 0, reach[i + 2]);
  if (!reach_empty) view.copy_(block);
}

}  // namespace

uint64_t conv_row_block_runs() { return row_block_runs.load(std::memory_order_relaxed); }
uint64_t conv_merged_group_runs() { return merged_group_runs.load(std::memory_order_relaxed); }

// Conv declares the fused activations (oneDNN post-ops) and oneDNN's channels-last activation
// layout (kernels/cpu/dnn_layout.hpp) for its input X and output Y.
KernelDef conv_kernel_def() {
  KernelDef k;
  k.op = "Conv";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32;
  k.computes_in = kBF16;  // oneDNN's bf16 convolution (avx512_bf16; emulated on plain AVX-512)
  k.fused_activations = cpu_fused_activations();
  k.fused_activations.push_back("porta_residual");  // added by a binary post-op before the activation
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = [](const KernelContext& call) {
    bool f32 = call.in(0).dtype() == DType::f32;
    uint64_t inputs = f32 ? 1u | (call.has_input(3) ? 8u : 0u) : 0u;
    return KernelDef::LayoutUse{inputs, f32};
  };
  return k;
}

namespace {
const bool conv_registered = register_kernel_at_load([] {
  KernelDef k = conv_kernel_def();
  k.impl = {"onednn", 0};
  k.fn = conv_cpu;
  return k;
}());
}  // namespace
namespace {
const bool conv_transpose_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "ConvTranspose";
  k.backend = DeviceType::cpu;
  k.dtypes = kF32;
  k.computes_in = kBF16;
  k.fn = conv_transpose_cpu;
  return k;
}());
}  // namespace

}  // namespace porta::cpu
