// Shape, Constant, ConstantOfShape and Range on cpu: outputs written from attributes and
// host scalars.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/cpu_common.hpp"
#include "ops/shape_util.hpp"

namespace porta::cpu {

static void shape_cpu(KernelContext& ctx) {
  std::vector<int64_t> dims = opdef::shape_dims(ctx.in(0).shape(), *ctx.attrs);
  std::copy(dims.begin(), dims.end(), ctx.out(0).data<int64_t>());
}

// The inferred output has the attribute's shape and dtype, so the bytes copy over as they are.
static void constant_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  Tensor v;
  if (ctx.attrs->has("value")) {
    v = ctx.attrs->get_tensor("value").to(Device::cpu()).contiguous();
  } else if (ctx.attrs->has("value_float")) {
    v = Tensor::scalar(ctx.attrs->get_float("value_float"), DType::f32);
  } else if (ctx.attrs->has("value_int")) {
    int64_t i = ctx.attrs->get_int("value_int");
    v = Tensor::from_host(&i, {}, DType::i64);
  } else if (ctx.attrs->has("value_floats")) {
    std::vector<double> f = ctx.attrs->get_floats("value_floats");
    v = Tensor::from_values(f, {static_cast<int64_t>(f.size())}, DType::f32);
  } else {
    std::vector<int64_t> i = ctx.attrs->get_ints("value_ints");
    v = Tensor::from_host(i.data(), {static_cast<int64_t>(i.size())}, DType::i64);
  }
  std::memcpy(y.raw_data(), v.raw_data(), y.nbytes());
}

static void constant_of_shape_cpu(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  size_t elem = dtype_size(y.dtype());
  unsigned char value[8] = {};  // default: f32 0 (all-zero bits)
  if (ctx.attrs->has("value")) {
    Tensor v = ctx.attrs->get_tensor("value").to(Device::cpu()).contiguous();
    std::memcpy(value, v.raw_data(), elem);
  }
  char* dst = y.numel() > 0 ? static_cast<char*>(y.raw_data()) : nullptr;
  parallel_for(y.numel(), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) std::memcpy(dst + i * elem, value, elem);
  });
}

static void range_cpu(KernelContext& ctx) {
  visit_dtype(ctx.out(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw DTypeError("[Range] expected a numeric dtype, got bool");
    } else {
      T* y = ctx.out(0).data<T>();
      int64_t n = ctx.out(0).numel();
      if constexpr (std::is_integral_v<T>) {
        int64_t start = static_cast<int64_t>(ctx.in(0).data<T>()[0]);
        int64_t delta = static_cast<int64_t>(ctx.in(2).data<T>()[0]);
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(start + i * delta);
      } else {
        double start = to_double(ctx.in(0).data<T>()[0]), delta = to_double(ctx.in(2).data<T>()[0]);
        for (int64_t i = 0; i < n; ++i) y[i] = from_double<T>(start + static_cast<double>(i) * delta);
      }
    }
  });
}

PORTA_REGISTER_KERNEL(Shape, cpu, kAllTypes, shape_cpu)
PORTA_REGISTER_KERNEL(Constant, cpu, kAllTypes, constant_cpu)
PORTA_REGISTER_KERNEL(ConstantOfShape, cpu, kAllTypes, constant_of_shape_cpu)
PORTA_REGISTER_KERNEL(Range, cpu, kNumeric, range_cpu)

}  // namespace porta::cpu
