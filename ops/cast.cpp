// Cast: converts to the dtype named by attribute `to` (ONNX TensorProto code): 1 f32, 2 u8,
// 3 i8, 6 i32, 7 i64, 9 bool, 10 f16, 11 f64, 16 bf16; any other code is Unsupported.
// Conversion rules (deterministic on every backend):
// - to bool: x != 0 (NaN -> true);
// - float to integer: truncate toward zero; NaN -> 0; values beyond the i64 range (and ±inf)
//   saturate to the i64 limits; the i64 value then wraps to narrower types modulo 2^bits
//   (numpy and PyTorch on x86 give the same for in-range values, e.g. -3.7 -> u8 253);
// - integer to narrower integer: wraps modulo 2^bits (two's complement);
// - to a float type: rounds to nearest even (f64 -> f16/bf16 rounds through f32).
#include <cmath>
#include <optional>

#include "ops/elementwise_common.hpp"

namespace porta::opdef {

namespace {

/// The porta dtype of an ONNX TensorProto type code, or nullopt when porta has none.
std::optional<DType> dtype_from_onnx_code(int64_t code) {
  switch (code) {
    case 1: return DType::f32;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 9: return DType::boolean;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 16: return DType::bf16;
    default: return std::nullopt;
  }
}

constexpr const char* kSupportedCodes = "1 (f32), 2 (u8), 3 (i8), 6 (i32), 7 (i64), 9 (bool), 10 (f16), 11 (f64), 16 (bf16)";

DType target(const Attributes& a, DType from) {
  int64_t code = a.get_int("to");
  auto t = dtype_from_onnx_code(code);
  if (!t)
    throw Unsupported(str("[Cast] to must be one of ", kSupportedCodes, "; got to=", code,
                          " (input is ", dtype_name(from), ")"));
  return *t;
}

double convert(double v, DType to) {
  switch (to) {
    case DType::boolean: return v != 0 ? 1 : 0;
    case DType::f64: return v;
    case DType::f32: return static_cast<float>(v);
    case DType::f16: return f16_to_f32(f32_to_f16(static_cast<float>(v)));
    case DType::bf16: return bf16_to_f32(f32_to_bf16(static_cast<float>(v)));
    default: break;
  }
  if (std::isnan(v)) return 0;
  // Saturated values: i64 max has all low bits set (-1, or 255 as u8); i64 min has none.
  if (v >= 9223372036854775807.0) return to == DType::i64 ? 9223372036854775807.0 : to == DType::u8 ? 255 : -1;
  if (v <= -9223372036854775808.0) return to == DType::i64 ? -9223372036854775808.0 : 0;
  return ew::wrap_to(std::trunc(v), to);
}

}  // namespace

PORTA_REGISTER_OP(Cast) {
  OpSchema s;
  s.name = "Cast";
  s.inputs = {"input"};
  s.outputs = {"output"};
  s.attrs = {attr_required("to", AttrType::Int)};
  s.infer = [](InferContext& ctx) { ctx.set_output(0, ctx.shape(0), target(*ctx.attrs, ctx.dtype(0))); };
  s.reference = [](KernelContext& ctx) {
    DType to = target(*ctx.attrs, DType::f64);
    const double* x = ctx.in(0).data<double>();
    double* y = ctx.out(0).data<double>();
    for (int64_t i = 0; i < ctx.out(0).numel(); ++i) y[i] = convert(x[i], to);
  };
  s.cases = [] {
    std::vector<OpCase> c;
    for (int64_t code : {1, 2, 3, 6, 7, 9, 10, 11, 16}) {
      std::string to = std::string(dtype_name(*dtype_from_onnx_code(code)));
      Attributes a{{"to", code}};
      c.push_back({"to_" + to, {in({3, 5, 7}, -100, 100)}, a, kAllTypes});
      c.push_back({"to_" + to + "_fractions", {in({33, 9}, -3, 3)}, a, kFloats});
      c.push_back({"to_" + to + "_scalar", {in({})}, a, kF32 | kI64 | kBool});
      c.push_back({"to_" + to + "_empty", {in({0, 2})}, a, kF32 | kI32});
      c.push_back({"to_" + to + "_specials",
                   {ew::fixed({9}, {NAN, INFINITY, -INFINITY, -0.0, 1e30, -1e30, -3.7, 300.5, -129.5})},
                   a, kF32 | kF64});
      // Beyond 32 bits: floats that split into two words, i64 values that truncate.
      c.push_back({"to_" + to + "_wide",
                   {ew::fixed({8}, {5e9, -5e9, 4294967296.0, -2147483649.0, 1.5e18, -9.2e18, 2147483648.0,
                                    -4294967297.0})},
                   a, kF32 | kF64 | kI64});
    }
    c.push_back({"i64_to_i8_wraps", {ew::fixed({4}, {200, -200, 1000, -129})}, {{"to", int64_t{3}}}, kI64 | kI32});
    OpCase big{"4096x4096_to_f16", {in({4096, 4096})}, {{"to", int64_t{10}}}, kF32};
    big.perf = true;
    c.push_back(big);
    return c;
  };
  s.flops = flops_per_output_element(0);
  return s;
}

}  // namespace porta::opdef
