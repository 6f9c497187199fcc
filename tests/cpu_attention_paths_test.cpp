// The cpu attention kernel's three ways through a call (kernels/cpu/scaled_dot_product_attention.cpp):
// register-tiled loops for small blocks, the whole score tensor at once for short sequences
// (one query block, at most 2^20 scores), and blocks of queries streamed over blocks of keys.
// Each with a mask that hides keys (and every key from one query), causal or not, in f32 and
// with the bf16 products of a bf16 session, against the float64 reference, outputs poisoned;
// at every vector width this CPU runs (the small-block loops block by it).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "kernels/cpu/cpu_common.hpp"
#include "runtime/eager.hpp"
#include "tests/cpu_threads.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

struct Shape4 {
  const char* path;
  int64_t b, h, sq, skv, d, dv;
};

// Small blocks (<= 64K multiply-adds), whole calls, streamed blocks (Sq past one block of 128
// queries, Skv past one block of 512 keys).
const std::vector<Shape4> kShapes = {
    {"direct", 2, 3, 9, 17, 16, 8},
    {"direct, 100 keys (more than one group of columns at 256-bit vectors)", 1, 2, 9, 100, 16, 8},
    {"whole", 1, 5, 49, 49, 32, 32},
    {"whole, one block of 128 queries (causal: two of 64, streamed)", 1, 2, 128, 300, 64, 48},
    {"streamed", 1, 2, 150, 700, 32, 16},
};

// A mask over [Sq, Skv] in [-2, 0) hiding every third key of each row but key 0 (so causal rows
// keep one), and every key of query 1.
Tensor hiding_mask(int64_t sq, int64_t skv) {
  Tensor m = random_f32({sq, skv}, -2, 0);
  float* v = m.data<float>();
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j)
      if (i == 1 || ((i + j) % 3 == 2 && j != 0)) v[i * skv + j] = ninf;
  return m;
}

TEST(CpuAttentionPaths, EveryPathMatchesTheReference) {
  const OpSchema* op = find_op("ScaledDotProductAttention");
  ASSERT_NE(op, nullptr);
  for (int width : cpu_vector_widths())
    for (const Shape4& s : kShapes)
      for (bool causal : {false, true})
        for (bool bf16 : {false, true}) {
          VectorWidth narrow(width);
          SCOPED_TRACE(str(s.path, causal ? ", causal" : "", bf16 ? ", bf16" : "", ", ", VectorWidth::name(width),
                           ", seed ", seed()));
          std::vector<Tensor> in = {random_f32({s.b, s.h, s.sq, s.d}), random_f32({s.b, s.h, s.skv, s.d}),
                                    random_f32({s.b, s.h, s.skv, s.dv}), hiding_mask(s.sq, s.skv)};
          Attributes plain = complete_attributes(*op, Attributes{{"causal", int64_t{causal ? 1 : 0}}}, "");
          Attributes call_attrs = plain;
          if (bf16) call_attrs.set("porta_compute", int64_t{16});
          KernelContext call;
          call.op = op;
          call.attrs = &call_attrs;
          call.device = Device::cpu();
          call.backend = &backend_for(Device::cpu());
          call.inputs = in;
          call.outputs = {Tensor::from_values(std::vector<double>(static_cast<size_t>(s.b * s.h * s.sq * s.dv), 1e30),
                                              {s.b, s.h, s.sq, s.dv}, DType::f32)};  // poisoned
          Resolution r = resolve_call(call, DType::f32);
          ASSERT_EQ(r.path, Path::native) << r.reason;
          r.kernel->fn(call);
          r.kernel->fn(call);  // a second call reuses what the first kept in the call's state
          std::vector<Tensor> in64;
          for (const Tensor& t : in) in64.push_back(t.cast(DType::f64));
          std::vector<double> ref = reference_op(op->qualified_name(), in64, plain, 1).at(0).to_doubles();
          std::vector<double> got = call.outputs[0].to_doubles();
          // Query 1 sees no key: NaN there, and only there.
          double err = 0, norm = 0;
          for (size_t k = 0; k < got.size(); ++k) {
            const int64_t row = static_cast<int64_t>(k) / s.dv, i = row % s.sq;
            if (i == 1) {
              EXPECT_TRUE(std::isnan(got[k])) << "element " << k;
              continue;
            }
            ASSERT_TRUE(std::isfinite(got[k])) << "element " << k << ": " << got[k];
            err += (got[k] - ref[k]) * (got[k] - ref[k]);
            norm += ref[k] * ref[k];
          }
          // bf16 products: rounding Q, K, V and the probabilities (8 bits) gives relative errors of
          // about 2^-8 / sqrt-ish sums; f32: the usual accumulated rounding.
          EXPECT_LT(std::sqrt(err / norm), bf16 ? 2e-2 : 1e-5);
          // The register loops of small blocks round to bf16 themselves; the other paths use
          // oneDNN's bf16 matmul where this CPU has one, and compute in f32 where it has none.
          if (bf16 && (std::string(s.path).rfind("direct", 0) == 0 || cpu::onednn_has_bf16()))
            EXPECT_GT(std::sqrt(err / norm), 1e-5) << "as exact as f32: not computed in bf16";
        }
}

}  // namespace
}  // namespace porta::test
