// Sub, Mul, Div, Mod and PRelu on cpu: broadcasting loops the compiler vectorizes (at 4096x4096 f32 they run
// at memory bandwidth, so oneDNN's binary primitive would not be faster). Integer arithmetic
// goes through unsigned types so overflow wraps instead of being undefined.
#include <cmath>
#include <type_traits>

#include "kernels/cpu/dnn_layout.hpp"
#include "kernels/cpu/elementwise_cpu.hpp"

namespace porta::cpu {
namespace {

template <typename C>
using wide_unsigned = std::make_unsigned_t<C>;

void sub_cpu(KernelContext& ctx) {
  ew::binary_apply<kNumeric, false>(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>)
      return static_cast<C>(static_cast<wide_unsigned<C>>(a) - static_cast<wide_unsigned<C>>(b));
    else return a - b;
  });
}

// The Mul of a squeeze-excite block, x (N x C x spatial) times a per-channel s (N or 1 x C x
// 1...), with x and y in the channels-last layout (set by the session, see mul_layout_use):
// each pixel's channel row times s's row.
void channel_scale_channels_last(const Tensor& x, const Tensor& s, Tensor& y) {
  const int64_t n = x.dim(0), c = x.dim(1), pixels = c == 0 ? 0 : x.numel() / (n * c);
  const float* xp = x.data<float>();
  const float* sp = s.data<float>();
  float* yp = y.data<float>();
  const bool per_image = s.rank() == x.rank() && s.dim(0) != 1;
  parallel_for(n * pixels, std::max<int64_t>(1, 8192 / std::max<int64_t>(c, 1)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* srow = sp + (per_image ? r / pixels : 0) * c;
      const float* xrow = xp + r * c;
      float* yrow = yp + r * c;
      for (int64_t k = 0; k < c; ++k) yrow[k] = xrow[k] * srow[k];
    }
  });
}

// Which input of a Mul is the activation x of a per-channel scale (the other being N or 1 x C x
// 1... of x's rank, or C x 1... one rank lower), or -1.
int channel_scaled_input(const KernelContext& call) {
  if (call.inputs.size() != 2 || !call.has_input(0) || !call.has_input(1) || call.outputs.empty()) return -1;
  const Shape& y = call.outputs[0].shape();
  if (y.size() < 3 || y.size() > 5 || call.in(0).dtype() != DType::f32) return -1;
  for (int full = 0; full < 2; ++full) {
    const Shape& x = call.in(full).shape();
    Shape s = call.in(1 - full).shape();
    // A scale of lower rank broadcasts from the right ([C, 1, 1] against [N, C, H, W]).
    if (s.size() < y.size() && s.size() + 1 >= y.size()) s.insert(s.begin(), y.size() - s.size(), 1);
    if (x != y || s == y || s.size() != y.size() || shape_numel(s) == 1) continue;
    bool per_channel = (s[0] == 1 || s[0] == y[0]) && s[1] == y[1];
    for (size_t i = 2; i < s.size(); ++i) per_channel &= s[i] == 1;
    if (per_channel) return full;
  }
  return -1;
}

KernelDef::LayoutUse mul_layout_use(const KernelContext& call) {
  int full = channel_scaled_input(call);
  if (full < 0) return {};
  return {uint64_t{1} << full, true, true};
}

void mul_cpu(KernelContext& ctx) {
  if (activation_layout(*ctx.attrs).output) {
    int full = channel_scaled_input(ctx);
    if (full < 0) throw BackendError("[Mul] internal: channels-last layout on a call that is no per-channel scale");
    channel_scale_channels_last(ctx.in(full), ctx.in(1 - full), ctx.out(0));
    return;
  }
  ew::binary_apply<kNumeric, false>(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      // uint8/int8 promote to int (no overflow); wider types multiply as unsigned (wraps).
      using U = std::conditional_t<(sizeof(C) < sizeof(int)), int, wide_unsigned<C>>;
      return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  });
}

void div_cpu(KernelContext& ctx) {
  ew::binary_apply<kNumeric, false>(ctx, [](auto a, auto b) {
    using C = decltype(a);
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return static_cast<C>(0 - static_cast<wide_unsigned<C>>(a));  // MIN / -1 wraps
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  });
}

// Mod (ops/binary_arith.cpp): fmod = 1 keeps the dividend's sign, fmod = 0 the divisor's.
void mod_cpu(KernelContext& ctx) {
  bool c_style = ctx.attrs->get_int("fmod") != 0;
  auto f = [c_style](auto a, auto b) {
    using C = decltype(a);
    C r;
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1)) return C(0);  // MIN % -1 would trap
      r = static_cast<C>(a % b);
    } else {
      r = std::fmod(a, b);
    }
    if (!c_style && r != C(0) && ((r < C(0)) != (b < C(0)))) r = static_cast<C>(r + b);
    return r;
  };
  ew::binary_apply<kNumeric, false>(ctx, f);
}

void prelu_cpu(KernelContext& ctx) {
  ew::binary_apply<kFloats, false>(ctx, [](auto x, auto slope) { return x < decltype(x)(0) ? slope * x : x; });
}

}  // namespace

PORTA_REGISTER_KERNEL(Mod, cpu, kNumeric, mod_cpu)
PORTA_REGISTER_KERNEL(PRelu, cpu, kFloats, prelu_cpu)
PORTA_REGISTER_ELEMENTWISE_KERNEL(Sub, cpu, kNumeric, sub_cpu)
// Mul: a flat loop for operands of one shape (any layout), and the per-channel scale of
// squeeze-excite blocks on channels-last activations.
namespace {
const bool mul_registered = register_kernel_at_load([] {
  KernelDef k;
  k.op = "Mul";
  k.backend = DeviceType::cpu;
  k.dtypes = kNumeric;
  k.fn = mul_cpu;
  k.layout_agnostic = true;
  k.private_layout = kOneDnnChannelsLast;
  k.layout_use = mul_layout_use;
  return k;
}());
}  // namespace
PORTA_REGISTER_ELEMENTWISE_KERNEL(Div, cpu, kNumeric, div_cpu)

}  // namespace porta::cpu
