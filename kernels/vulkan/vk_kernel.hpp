// porta vulkan kernels — what every kernel launcher uses: tensor bindings, dispatch grids,
// broadcast index maps, and `supports` checks against the device's limits.
#pragma once
#include <bit>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/vulkan/vk_context.hpp"
#include "porta/error.hpp"
#include "porta/op.hpp"
#include "porta/util.hpp"

namespace porta::vk {

/// One buffer of a dispatch: a tensor (or a byte window of it) read or written.
struct Arg {
  Tensor tensor;
  bool write = false;
  size_t byte_offset = 0;        ///< window start inside the tensor
  size_t bytes = SIZE_MAX;       ///< window size (SIZE_MAX: to the tensor's end)
  /// Read as a uniform texel buffer of 4-element texels (f32: RGBA32F, f16: RGBA16F; the shader
  /// declares a samplerBuffer and texelFetch(t, i) returns elements 4i..4i+3 as a vec4). The
  /// view covers the window rounded up to whole texels; what lies past the tensor's end in the
  /// last texel is unspecified. The only load path that CPU-like drivers (lavapipe) vectorize.
  bool texel = false;
  /// With `texel`: read the elements' raw bits (RGBA32UI / RGBA16UI, a usamplerBuffer) instead
  /// of float texels.
  bool texel_bits = false;
  /// With `texel`: one element per texel (f32: R32F, f16: R16F; with texel_bits R32UI / R16UI;
  /// texelFetch(t, i).x is element i), for gathers at any element offset.
  bool texel_scalar = false;
};
inline Arg input(const Tensor& t) { return {t, false}; }
inline Arg output(const Tensor& t) { return {t, true}; }
inline Arg texels(const Tensor& t) { return {t, false, 0, SIZE_MAX, true}; }
inline Arg texel_bits(const Tensor& t) { return {t, false, 0, SIZE_MAX, true, true}; }
inline Arg scalar_texels(const Tensor& t) { return {t, false, 0, SIZE_MAX, true, false, true}; }
/// One element's raw bits per texel (R32UI / R16UI, a usamplerBuffer).
inline Arg scalar_texel_bits(const Tensor& t) { return {t, false, 0, SIZE_MAX, true, true, true}; }

/// One dispatch of an embedded shader.
struct Launch {
  std::string shader;                 ///< file name without .comp
  std::string variant = "f32";        ///< build-time variant (see variant_for)
  std::vector<int32_t> spec;          ///< specialization constants 1..n
  uint32_t local_size = 256;          ///< specialization constant 0
  std::vector<Arg> args;              ///< bindings 0..n-1, in order
  std::vector<uint32_t> push;         ///< push-constant words (at most 32)
  uint32_t groups[3] = {1, 1, 1};

  void push_u(uint64_t v) { push.push_back(static_cast<uint32_t>(v)); }
  void push_i(int64_t v) { push.push_back(static_cast<uint32_t>(static_cast<int32_t>(v))); }
  void push_f(double v) { push.push_back(std::bit_cast<uint32_t>(static_cast<float>(v))); }
};

/// "f32" or "f16": the shader variant holding elements of dtype `t`.
std::string variant_for(DType t);
Context& device_context(const KernelContext& ctx);
const DeviceCaps& device_caps(const KernelContext& ctx);
/// Spreads `groups` workgroups over x and y within the device's per-dimension limit; shaders
/// use global_index() from common.glsl to linearise.
void set_grid(Launch& l, const DeviceCaps& caps, uint64_t groups);
/// Records the dispatch (skipped when it has no work).
void launch(const KernelContext& ctx, Launch l);

/// Bytes one storage-buffer binding may cover: maxStorageBufferRange, or less while the test
/// override of vk_validation.hpp (set_binding_limit_override) asks for less.
uint64_t binding_limit(const KernelContext& ctx);
/// Elements from the first to the last one `t` views, plus one (0 when empty): what a binding
/// of a strided view must cover (Arg::bytes).
int64_t view_span(const Tensor& t);
/// For kernels registered with strided_inputs: replaces each non-contiguous input the kernel
/// does not read where it lies (`keep(i, input)` false) by a contiguous copy, which is then no
/// session constant.
void contiguous_inputs_unless(KernelContext& ctx, const std::function<bool(size_t, const Tensor&)>& keep);
/// Declines (returns the reason) when any input or output is larger than one binding may be
/// or has more elements than 32-bit indexing reaches; "" otherwise.
std::string fits_bindings(const KernelContext& ctx);
/// Reduction strategy for reduce.glsl's SUBGROUPS constant: 1 = subgroup arithmetic, 0 =
/// shared-memory tree (forced by a test hook).
int32_t reduction_strategy(const KernelContext& ctx);
/// Declines when the device lacks the subgroup arithmetic reduce.glsl's modules declare.
std::string reductions_ok(const KernelContext& ctx);
/// Loop iterations one invocation of a dispatch may run, summed over all of a shader's loops
/// (UINT64_MAX when the driver has no cap; the test override of vk_validation.hpp wins).
/// Past the cap a driver (lavapipe: 65535) leaves every loop silently, so a kernel whose
/// per-invocation iterations grow with the data sizes checks them against this in its
/// `supports`, or splits its work over several dispatches. Count each loop as its iterations
/// plus one (the pass that leaves it is counted too) and each barrier() as one; what this
/// returns already keeps an eighth of the measured cap back for what such a count misses.
uint64_t loop_limit(const KernelContext& ctx);
/// "" when `iterations` (an upper bound for one invocation) fits loop_limit(); else the reason
/// to decline, naming `what` drives the count.
std::string loop_budget_ok(const KernelContext& ctx, uint64_t iterations, const std::string& what);
/// "" when `groups` workgroups fit the grid set_grid spreads them over; else the reason to
/// decline, naming `what` they cover.
std::string grid_ok(const KernelContext& ctx, uint64_t groups, const std::string& what);
/// Declines when the dispatch dtype is f16 but the device lacks 16-bit storage.
std::string fp16_ok(const KernelContext& ctx, DType dtype);
/// "" on a CPU-like device (type `cpu`: lavapipe), where kernels written for it come first;
/// elsewhere the reason, saying that `instead` (what such a device runs) suits it.
std::string cpu_like_ok(const KernelContext& ctx, const char* instead);
/// cpu_like_ok, and `t` readable as float texels there (f32: RGBA32F, f16: RGBA16F uniform
/// texel buffers, with 16-bit storage).
std::string float_texels_ok(const KernelContext& ctx, DType t, const char* instead);
/// float_texels_ok's check of the device's texel formats alone (f32 or f16, RGBA32F / RGBA16F
/// uniform texel buffers, 16-bit storage for f16), on any device type.
std::string texel_formats_ok(const KernelContext& ctx, DType t);

/// Indices below this take common.glsl's div21 instead of an integer division (shaders with a
/// SMALL specialization constant).
inline constexpr uint64_t kDiv21Bound = uint64_t{1} << 21;

/// "" when `t` can be bound with `scalar_texels` (the device has R32F / R16F uniform texel
/// buffers and `t` fits maxTexelBufferElements); else the reason.
std::string scalar_texels_ok(const KernelContext& ctx, const Tensor& t);

/// What graph fusion folded into a Conv call (runtime/graph_fusion.cpp): the activation of its
/// `porta_activation` attributes and the residual of its input 3 (`porta_residual`), which the
/// conv shaders apply where they write Y, as Act(y + residual) (activation.glsl).
struct Epilogue {
  int32_t act = 0;  ///< the shaders' ACT: ops/fused_activation.hpp's FusedActivation::Kind
  double alpha = 0, beta = 0;
  const Tensor* residual = nullptr;
  /// Appends what the including shader declares last: specialization constants ACT and
  /// HAS_RES, push constants alpha and beta, and the residual's binding (`stand_in` bound
  /// when there is none). Call it after every other spec, push and arg of the launch.
  void add_to(Launch& l, const Tensor& stand_in) const;
};
/// The call's Epilogue (none for ops without the attributes, e.g. MatMul).
Epilogue epilogue_of(const KernelContext& ctx);
/// Each activation of ops/fused_activation.hpp (activation.glsl applies them all).
std::vector<std::string> fused_activation_list();
/// What every Vulkan Conv kernel declares in KernelDef::fused_activations: those activations
/// and "porta_residual".
std::vector<std::string> conv_fused_activations();
/// A vulkan KernelDef of `op` whose kernel applies `fused` (KernelDef::fused_activations).
KernelDef kernel_applying(const char* op, DTypeSet dtypes, KernelFn fn, SupportsFn supports, KernelImpl impl,
                          std::vector<std::string> fused);

/// Output shape with, per input, element strides (0 where broadcast), adjacent axes merged
/// wherever every operand allows; rank <= kMaxRank after merging or kernels decline.
struct BroadcastMap {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
};
inline constexpr int kMaxRank = 6;
BroadcastMap broadcast_map(const Shape& out, const std::vector<Shape>& inputs);

}  // namespace porta::vk
