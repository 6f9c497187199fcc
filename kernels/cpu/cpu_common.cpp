// porta cpu kernels — broadcast indexing helpers, and the compute format of a call (bf16 inside).
#include "kernels/cpu/cpu_common.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "kernels/cpu/custom_vmath.hpp"
#include "backends/cpu/dnnl_context.hpp"
#include "kernels/cpu/vector_width.hpp"

#include "porta/error.hpp"
#include "porta/util.hpp"

#include "ops/broadcast_util.hpp"

namespace porta::cpu {

std::vector<int64_t> broadcast_strides(const Tensor& t, const Shape& out_shape) {
  return opdef::broadcast_strides(t.shape(), t.strides(), out_shape);
}

DType compute_format(const KernelContext& ctx) {
  const int64_t code = ctx.attrs ? ctx.attrs->get_int("porta_compute", 0) : 0;
  switch (code) {
    case 0:
    case 1: return DType::f32;
    case 16: return DType::bf16;
    default:
      throw InvalidArgument(str("[", ctx.op ? ctx.op->name : std::string("cpu kernel"),
                                "] porta_compute should be 16 (bf16) on the cpu, got ", code));
  }
}

namespace {
// PORTA_CPU_VECTOR_BYTES caps the widths from the start (16 or 32: runs the narrower kernels on
// a wider CPU; ctest's cpu_vectors_* entries run the cpu kernels' suites so).
int initial_vector_bytes_limit() {
  const char* e = std::getenv("PORTA_CPU_VECTOR_BYTES");
  return e ? std::atoi(e) : 0;
}
std::atomic<int> g_vector_bytes_limit{initial_vector_bytes_limit()};
}  // namespace

int vector_bytes() {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  static const int b = __builtin_cpu_supports("x86-64-v4") ? 64 : __builtin_cpu_supports("x86-64-v3") ? 32 : 16;
#else
  static const int b = 16;
#endif
  const int limit = g_vector_bytes_limit.load(std::memory_order_relaxed);
  return limit > 0 ? std::min(b, limit) : b;
}

void limit_vector_bytes(int bytes) { g_vector_bytes_limit.store(bytes, std::memory_order_relaxed); }

int vector_bytes_limit() { return g_vector_bytes_limit.load(std::memory_order_relaxed); }

KernelDef f32_product_loop(const char* op, KernelImpl impl, KernelFn fn, SupportsFn supports,
                           std::vector<std::string> fused) {
  KernelDef k;
  k.op = op;
  k.backend = DeviceType::cpu;
  k.impl = std::move(impl);
  k.dtypes = kF32;
  k.fn = std::move(fn);
  k.supports = std::move(supports);
  k.computes_in = kBF16;
  k.fused_activations = std::move(fused);
  return k;
}

bool has_avx512_bf16() {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
  static const bool yes = __builtin_cpu_supports("avx512bf16");
  return yes;
#else
  return false;
#endif
}

bool onednn_has_bf16() {
  static const bool available = [] {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    try {
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(dnnl::memory::desc({16, 16}, dt::bf16, tag::ab),
                                                         dnnl::memory::desc({16, 16}, dt::bf16, tag::ab),
                                                         dnnl::memory::desc({16, 16}, dt::f32, tag::ab)),
                                      engine());
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return available;
}

namespace {
struct InsideCall {
  Tensor a16, b16;
  std::shared_ptr<void> inner;  // the bf16 call's own prepared state
};
}  // namespace

const Tensor& rounded_to_bf16(const Tensor& t, Tensor& keep) {
  if (!keep.defined() || keep.shape() != t.shape()) keep = Tensor::empty(t.shape(), DType::bf16);
  const float* src = t.data<float>();
  auto* dst = static_cast<uint16_t*>(keep.raw_data());
  parallel_for(t.numel(), int64_t{1} << 15, [&](int64_t b, int64_t e) { vmath::f32_to_bf16_n(src + b, dst + b, e - b); });
  return keep;
}

void compute_in_bf16(KernelContext& ctx, void (*body)(KernelContext&)) {
  if (!ctx.state) ctx.state = std::make_shared<InsideCall>();  // only this kernel sets its step's state
  auto& inside = *std::static_pointer_cast<InsideCall>(ctx.state);
  KernelContext sub = ctx;
  sub.inputs[0] = rounded_to_bf16(ctx.in(0), inside.a16);
  if (!ctx.is_constant_input(1) && ctx.in(1).dtype() == DType::f32) sub.inputs[1] = rounded_to_bf16(ctx.in(1), inside.b16);
  sub.state = inside.inner;
  sub.held.clear();
  body(sub);
  inside.inner = sub.state;
}

BroadcastIter::BroadcastIter(const Shape& out, const std::vector<const Tensor*>& inputs) : shape(out) {
  for (const Tensor* t : inputs) strides.push_back(broadcast_strides(*t, out));
  // Adjacent axes that every input walks as one (its stride on the outer one is its stride on
  // the inner one times the inner extent, 0 and 0 included) become one axis, and axes of
  // extent 1 go: runs are as long as the operands allow. A per-channel scale [C, 1, 1] of an
  // [N, C, H, W] activation runs H*W at a time instead of W (convnext_tiny's layer scales over
  // 16x16 maps: 28.7 us per Mul with runs of 16).
  if (shape.size() > 1) {
    Shape merged{shape.back()};
    std::vector<std::vector<int64_t>> mstrides;
    for (const auto& st : strides) mstrides.push_back({st.back()});
    for (size_t i = shape.size() - 1; i-- > 0;) {
      if (shape[i] == 1) continue;
      bool join = true;
      for (size_t k = 0; k < strides.size(); ++k) join = join && strides[k][i] == mstrides[k].front() * merged.front();
      if (merged.front() == 1) {  // the axis below was of extent 1: this one takes its place
        merged.front() = shape[i];
        for (size_t k = 0; k < strides.size(); ++k) mstrides[k].front() = strides[k][i];
      } else if (join) {
        merged.front() *= shape[i];
      } else {
        merged.insert(merged.begin(), shape[i]);
        for (size_t k = 0; k < strides.size(); ++k) mstrides[k].insert(mstrides[k].begin(), strides[k][i]);
      }
    }
    shape = std::move(merged);
    strides = std::move(mstrides);
  }
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
