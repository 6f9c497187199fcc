// The cpu Cast between f32 and the half formats (vectorized loops, kernels/cpu/custom_vmath):
// bit for bit what porta's scalar conversion (porta/dtype.hpp) gives, for every bf16 and f16
// bit pattern widened, and for f32 patterns chosen to hit each rounding case (ties to even
// both ways, carries into the exponent, the largest finite values, infinities, denormals,
// NaNs with any payload) plus fresh random ones; at lengths that leave every vector tail.
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/test_util.hpp"

namespace porta::test {
namespace {

uint32_t bits_of(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// ONNX's TensorProto codes of the three formats.
int64_t onnx_code(DType t) { return t == DType::bf16 ? 16 : t == DType::f16 ? 10 : 1; }

Tensor cast(const Tensor& x, DType to) { return call_op("Cast", {x}, Attributes{{"to", onnx_code(to)}}).at(0); }

// f32 bit patterns around every rounding boundary of both half formats, and random ones.
std::vector<uint32_t> f32_patterns() {
  std::vector<uint32_t> p;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t exp : {0u, 1u, 0x66u, 0x70u, 0x71u, 0x7fu, 0x8eu, 0x8fu, 0xfeu, 0xffu})
      for (uint32_t low : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x10000u, 0x17fffu, 0x18000u, 0x7fffffu,
                           0x7f8000u, 0x7fe000u, 0x7ff000u, 0x1000u, 0xfffu, 0x2000u, 0x400000u, 0x3fffffu})
        p.push_back(sign | exp << 23 | low);
  }
  std::uniform_int_distribution<uint32_t> any;
  for (int i = 0; i < 200000; ++i) p.push_back(any(rng()));
  return p;
}

void expect_same_bits(uint16_t got, uint16_t want, uint32_t from, bool nan, const char* what) {
  if (nan) {  // a NaN stays a NaN (its payload may differ with the instruction used)
    EXPECT_TRUE((got & 0x7fffu) > (std::string(what) == "bf16" ? 0x7f80u : 0x7c00u))
        << what << " of NaN 0x" << std::hex << from << " gave 0x" << got;
    return;
  }
  EXPECT_EQ(got, want) << what << " of 0x" << std::hex << from;
}

TEST(CastHalf, F32ToHalfRoundsAsTheScalarConversion) {
  const std::vector<uint32_t> patterns = f32_patterns();
  std::vector<float> values;
  for (uint32_t b : patterns) values.push_back(float_of(b));
  Tensor x = Tensor::from_host(values.data(), {static_cast<int64_t>(values.size())}, DType::f32);
  for (DType to : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(to));
    Tensor y = cast(x, to);
    const uint16_t* got = static_cast<const uint16_t*>(y.raw_data());
    int failures = 0;
    for (size_t i = 0; i < values.size() && failures < 20; ++i) {
      const uint16_t want = to == DType::bf16 ? f32_to_bf16(values[i]) : f32_to_f16(values[i]);
      const bool ok = std::isnan(values[i]) ? (got[i] & 0x7fffu) > (to == DType::bf16 ? 0x7f80u : 0x7c00u) : got[i] == want;
      if (!ok) {
        ++failures;
        expect_same_bits(got[i], want, patterns[i], std::isnan(values[i]), to == DType::bf16 ? "bf16" : "f16");
      }
    }
  }
}

TEST(CastHalf, EveryHalfPatternWidensExactly) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (DType from : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(from));
    Tensor x = Tensor::from_host(all.data(), {65536}, from);
    Tensor y = cast(x, DType::f32);
    const float* got = y.data<float>();
    int failures = 0;
    for (uint32_t i = 0; i < 65536 && failures < 20; ++i) {
      const float want = from == DType::bf16 ? bf16_to_f32(all[i]) : f16_to_f32(all[i]);
      const bool ok = std::isnan(want) ? std::isnan(got[i]) : bits_of(got[i]) == bits_of(want);
      if (!ok) {
        ++failures;
        ADD_FAILURE() << dtype_name(from) << " 0x" << std::hex << i << " widened to 0x" << bits_of(got[i])
                      << ", want 0x" << bits_of(want);
      }
    }
  }
}

// Every length up to two vectors past a block, so each loop's tail runs; nothing written past
// the output.
TEST(CastHalf, TailsAndNothingPastTheEnd) {
  for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 1000, 4099}) {
    Tensor x = random_f32({n}, -1e3, 1e3);
    for (DType to : {DType::bf16, DType::f16}) {
      SCOPED_TRACE(str(dtype_name(to), " n ", n));
      Tensor y = cast(x, to);
      ASSERT_EQ(y.numel(), n);
      const uint16_t* got = static_cast<const uint16_t*>(y.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        const float v = x.data<float>()[i];
        ASSERT_EQ(got[i], to == DType::bf16 ? f32_to_bf16(v) : f32_to_f16(v)) << "at " << i;
      }
      Tensor back = cast(y, DType::f32);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(back.data<float>()[i], to == DType::bf16 ? bf16_to_f32(got[i]) : f16_to_f32(got[i])) << "at " << i;
    }
  }
}

}  // namespace
}  // namespace porta::test
