// A 2-layer bidirectional batch_first LSTM as torch.onnx.export writes it: Transpose to
// [seq, batch, input], LSTM, Transpose Y [seq, dirs, batch, hidden] -> [seq, batch, dirs,
// hidden], Reshape to [seq, batch, dirs*hidden], second LSTM, Transpose back. The cpu kernels
// are checked end to end against the same chain run through the float64 references.
#include <gtest/gtest.h>

#include "porta/porta.hpp"
#include "tests/test_util.hpp"

namespace porta::test {
namespace {

using Chain = std::function<std::vector<Tensor>(std::string_view, const std::vector<Tensor>&, const Attributes&, int)>;

Tensor stack(const Chain& op, const Tensor& x_batch_first, const std::vector<std::vector<Tensor>>& layers,
             const std::string& direction) {
  int64_t batch = x_batch_first.shape()[0], seq = x_batch_first.shape()[1];
  Attributes attrs{{"direction", direction}};
  Tensor x = op("Transpose", {x_batch_first}, {{"perm", std::vector<int64_t>{1, 0, 2}}}, 1)[0];
  for (const auto& w : layers) {
    std::vector<Tensor> in = {x, w[0], w[1], w[2], Tensor(), w[3], w[4]};
    Tensor y = op("LSTM", in, attrs, 3)[0];
    y = op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, 1)[0];
    std::vector<double> shape = {static_cast<double>(seq), static_cast<double>(batch), -1};
    x = op("Reshape", {y, Tensor::from_values(shape, {3}, DType::i64)}, {}, 1)[0];
  }
  return op("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}, 1)[0];
}

void run(const std::string& direction) {
  const int64_t S = 7, N = 3, I = 5, H = 4, D = direction == "bidirectional" ? 2 : 1;
  auto rand = [](Shape s) { return make_input(InputSpec{s, DType::f32, -0.6, 0.6}, DType::f32); };
  std::vector<std::vector<Tensor>> layers;
  for (int64_t l = 0, in = I; l < 2; ++l, in = D * H)
    layers.push_back({rand({D, 4 * H, in}), rand({D, 4 * H, H}), rand({D, 8 * H}), rand({D, N, H}), rand({D, N, H})});
  Tensor x = make_input(InputSpec{{N, S, I}}, DType::f32);
  Chain kernels = [](std::string_view op, const std::vector<Tensor>& in, const Attributes& a, int n) {
    return call_op(op, in, a, n);
  };
  Chain references = [](std::string_view op, const std::vector<Tensor>& in, const Attributes& a, int n) {
    std::vector<DType> dts;
    std::vector<Tensor> out = reference_op(op, in, a, n, &dts);
    for (size_t i = 0; i < out.size(); ++i) out[i] = out[i].cast(dts[i]);
    return out;
  };
  Tensor got = stack(kernels, x, layers, direction), want = stack(references, x, layers, direction);
  EXPECT_EQ(got.shape(), (Shape{N, S, D * H}));
  Comparison c = compare(got, want.cast(DType::f64), 2e-5);
  EXPECT_TRUE(c.ok) << c.message << " (seed " << seed() << ")";
}

TEST(RnnStack, TwoLayerBatchFirstLstm) { run("forward"); }
TEST(RnnStack, TwoLayerBatchFirstBidirectionalLstm) { run("bidirectional"); }

}  // namespace
}  // namespace porta::test
