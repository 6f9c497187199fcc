// Cast (between f32, f16, u8, i8, i32, i64 and bool; same-type copies), Shape, Constant and
// ConstantOfShape on vulkan. Casts from or to f64/bf16 decline (CPU fallback, visible in
// `porta ops`).
#include <cstring>

#include "kernels/vulkan/elementwise.hpp"
#include "kernels/vulkan/movement.hpp"
#include "ops/shape_util.hpp"

namespace porta::vk {
namespace {

// Destination codes of cast.comp's DST constant, -1 when not native.
int cast_destination(DType t) {
  switch (t) {
    case DType::f32: return 0;
    case DType::f16: return 1;
    case DType::boolean: return 2;
    case DType::u8: return 3;
    case DType::i8: return 4;
    case DType::i32: return 5;
    case DType::i64: return 6;
    default: return -1;
  }
}

// The dtype of an ONNX `to` code among the native destinations, f64 (not native) otherwise.
DType cast_target(int64_t to) {
  switch (to) {
    case 1: return DType::f32;
    case 10: return DType::f16;
    case 9: return DType::boolean;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 6: return DType::i32;
    case 7: return DType::i64;
    default: return DType::f64;
  }
}

std::string cast_source_variant(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::u8: case DType::boolean: return "u8";
    case DType::i8: return "i8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    default: return "";
  }
}

void cast_vulkan(KernelContext& ctx) { run_cast(ctx, ctx.in(0), ctx.out(0)); }

std::string cast_supports(const KernelContext& ctx) {
  DType from = ctx.in(0).dtype();
  int64_t to = ctx.attrs->get_int("to");
  if (cast_source_variant(from).empty() || cast_destination(cast_target(to)) < 0)
    return str("cast from ", dtype_name(from), " to ONNX type ", to,
               " (native: between f32, f16, u8, i8, i32, i64 and bool)");
  const DeviceCaps& caps = device_caps(ctx);
  if (!caps.fp16_storage || !caps.int8_storage) return "the device lacks 16-bit or 8-bit storage";
  if (from == DType::i64 && !caps.int64_arithmetic)
    return "cast from i64 needs 64-bit integer arithmetic (shaderInt64), which the device lacks";
  return fits_bindings(ctx);
}

// Shape's values are the input's metadata, known on the host: uploading them is the kernel.
void shape_vulkan(KernelContext& ctx) {
  std::vector<int64_t> dims = opdef::shape_dims(ctx.in(0).shape(), *ctx.attrs);
  if (!dims.empty()) ctx.out(0).copy_from_host(dims.data(), dims.size() * sizeof(int64_t));
}

// Constant's value is in its attributes, on the host: uploading it is the kernel. (Sessions
// fold Constant nodes when compiling; this serves eager calls and partitions on the device.)
void constant_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  if (y.numel() == 0) return;
  const Attributes& a = *ctx.attrs;
  if (a.has("value")) {
    y.copy_(a.get_tensor("value").to(Device::cpu()).contiguous().reshape(y.shape()));
  } else if (a.has("value_float")) {
    y.copy_(Tensor::scalar(a.get_float("value_float"), DType::f32));
  } else if (a.has("value_floats")) {
    y.copy_(Tensor::from_values(a.get_floats("value_floats"), y.shape(), DType::f32));
  } else {
    // Through bytes, not doubles: int64 values beyond 2^53 must survive.
    std::vector<int64_t> i = a.has("value_int") ? std::vector<int64_t>{a.get_int("value_int")} : a.get_ints("value_ints");
    y.copy_from_host(i.data(), i.size() * sizeof(int64_t));
  }
}

void constant_of_shape_vulkan(KernelContext& ctx) {
  Tensor& y = ctx.out(0);
  uint64_t bits = 0;
  if (ctx.attrs->has("value")) {
    Tensor v = ctx.attrs->get_tensor("value").to(Device::cpu()).contiguous();
    if (v.numel() != 1) throw ShapeError(str("[ConstantOfShape] value should hold one element, got ", v.numel()));
    std::memcpy(&bits, v.raw_data(), dtype_size(v.dtype()));
  }
  run_fill_bits(ctx, y, bits);
}

std::string constant_of_shape_supports(const KernelContext& ctx) {
  DType t = DType::f32;
  if (ctx.attrs->has("value")) t = ctx.attrs->get_tensor("value").dtype();
  if (auto why = movable(ctx, t); !why.empty()) return why;
  return "";
}

}  // namespace

void run_cast(const KernelContext& ctx, const Tensor& x, const Tensor& y) {
  if (y.numel() == 0) return;
  if (x.dtype() == y.dtype()) {
    Tensor(y).copy_(x);
    return;
  }
  Launch l;
  l.shader = "cast";
  l.variant = cast_source_variant(x.dtype());
  l.spec = {cast_destination(y.dtype())};
  l.args = {input(x), output(y), output(y), output(y), output(y)};
  l.push_u(y.numel());
  set_grid(l, device_caps(ctx), (y.numel() + 255) / 256);
  launch(ctx, std::move(l));
}

PORTA_REGISTER_KERNEL(Cast, vulkan, kF32 | kF16 | kInts | kBool, cast_vulkan, cast_supports)
PORTA_REGISTER_KERNEL(Shape, vulkan, kAllTypes, shape_vulkan)
PORTA_REGISTER_KERNEL(Constant, vulkan, kAllTypes, constant_vulkan)
PORTA_REGISTER_KERNEL(ConstantOfShape, vulkan, kAllTypes, constant_of_shape_vulkan, constant_of_shape_supports)

}  // namespace porta::vk
