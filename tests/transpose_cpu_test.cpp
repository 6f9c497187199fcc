// Transpose on cpu copies in tiles, with 16x16 register transposes for whole tiles of 32-bit
// elements and an element loop for the edges. Inputs that are views (permuted, or expanded
// with zero strides) must give the same result as their contiguous copies, for sizes below
// one tile and with whole tiles plus edges.
#include <gtest/gtest.h>

#include <vector>

#include "porta/dispatch.hpp"
#include "porta/dtype.hpp"

namespace {

using porta::Attributes;
using porta::DType;
using porta::Tensor;

std::vector<double> transpose(const Tensor& x, std::vector<int64_t> perm) {
  Attributes a{{"perm", perm}};
  return porta::call_op("Transpose", {x}, a).at(0).to_doubles();
}

TEST(TransposeCpu, ViewsMatchTheirContiguousCopies) {
  for (int64_t n : {40, 300}) {  // no whole 64x64 tile; four whole tiles per row plus edges
    std::vector<double> v(static_cast<size_t>(n * n));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 977) - 300.0;
    Tensor base = Tensor::from_values(v, {n, n}, DType::f32);
    Tensor permuted = base.permute({1, 0});  // strides (1, n): not contiguous
    ASSERT_FALSE(permuted.is_contiguous());
    EXPECT_EQ(transpose(permuted, {1, 0}), transpose(permuted.contiguous(), {1, 0})) << "n " << n;
    Tensor row = Tensor::from_values(std::vector<double>(v.begin(), v.begin() + n), {1, n}, DType::f32);
    Tensor expanded = row.expand({n, n});  // stride 0 along the rows
    EXPECT_EQ(transpose(expanded, {1, 0}), transpose(expanded.contiguous(), {1, 0})) << "n " << n;
  }
}

// Values, not only agreement: every element lands where the permutation says, for 32-bit
// types moved by the register transposes (f32, i32 with bit patterns no float arithmetic
// would keep: NaN payloads, subnormals) and for a 2-byte and an 8-byte type, on shapes with
// whole tiles and ragged edges, 2-D and batched.
TEST(TransposeCpu, EveryElementLandsWhereThePermutationSays) {
  struct Case {
    porta::Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Case& c : {Case{{300, 200}, {1, 0}}, Case{{3, 130, 129}, {0, 2, 1}}, Case{{65, 2, 64}, {2, 1, 0}}})
    for (DType dt : {DType::f32, DType::i32, DType::f16, DType::i64}) {
      int64_t n = 1;
      for (int64_t d : c.shape) n *= d;
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>((i * 7) % 2003 - 1000);
      Tensor x = Tensor::from_values(v, c.shape, dt);
      std::vector<double> got = transpose(x, c.perm);
      // Output index -> input index through the permutation.
      porta::Shape out;
      for (int64_t p : c.perm) out.push_back(c.shape[static_cast<size_t>(p)]);
      std::vector<int64_t> in_strides(c.shape.size(), 1);
      for (size_t i = c.shape.size() - 1; i-- > 0;) in_strides[i] = in_strides[i + 1] * c.shape[i + 1];
      int bad = 0;
      for (int64_t o = 0; o < n && bad < 5; ++o) {
        int64_t rem = o, src = 0;
        for (size_t k = out.size(); k-- > 0;) {
          src += (rem % out[k]) * in_strides[static_cast<size_t>(c.perm[k])];
          rem /= out[k];
        }
        if (got[static_cast<size_t>(o)] != v[static_cast<size_t>(src)]) {
          ++bad;
          ADD_FAILURE() << porta::dtype_name(dt) << " output " << o << ": " << got[static_cast<size_t>(o)]
                        << ", expected input " << src << " = " << v[static_cast<size_t>(src)];
        }
      }
    }
  // i32 bit patterns that are NaNs with payloads and subnormals as floats move unchanged.
  std::vector<int32_t> bits(128 * 64);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<int32_t>(0x7fa00001u + i) ^ (i % 3 ? 0 : 0x7f800000);
  Tensor xb = Tensor::from_host(bits.data(), {128, 64}, DType::i32);
  Tensor yb = porta::call_op("Transpose", {xb}, Attributes{{"perm", std::vector<int64_t>{1, 0}}}).at(0);
  std::vector<int32_t> out(bits.size());
  yb.copy_to_host(out.data(), out.size() * sizeof(int32_t));
  for (int64_t r = 0; r < 128; ++r)
    for (int64_t c = 0; c < 64; ++c)
      ASSERT_EQ(out[static_cast<size_t>(c * 128 + r)], bits[static_cast<size_t>(r * 64 + c)]) << r << "," << c;
}

}  // namespace
