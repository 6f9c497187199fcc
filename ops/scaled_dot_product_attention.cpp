// ScaledDotProductAttention (ai.porta, version 1):
//   Y = softmax(Q K^T * scale + Mask + CausalMask) V   (softmax over the key axis)
// Q [B,H,Sq,D], K [B,H,Skv,D], V [B,H,Skv,Dv] (same float dtype, equal B and H);
// Mask (optional): additive, same dtype, broadcastable to [B,H,Sq,Skv] (-inf hides a key).
// scale (float): default 1/sqrt(D). causal (int, default 0): key j is visible to query i only
// when j <= i (top-left aligned, PyTorch's is_causal=True); it combines with Mask.
// Y [B,H,Sq,Dv]. With Skv = 0 every output is 0 (an empty weighted sum), as in PyTorch's
// math path; a query row that every key is hidden from gives NaN, also as in PyTorch.
#include <cmath>
#include <limits>

#include "ops/custom_common.hpp"

namespace porta::opdef {
namespace {

double scale_of(const Attributes& a, int64_t d) {
  if (a.has("scale")) return a.get_float("scale");
  return 1.0 / std::sqrt(static_cast<double>(d));
}

}  // namespace

PORTA_REGISTER_OP(ScaledDotProductAttention) {
  OpSchema s;
  s.name = "ScaledDotProductAttention";
  s.domain = kPortaDomain;
  s.inputs = {"Q", "K", "V", "Mask?"};
  s.outputs = {"Y"};
  s.attrs = {attr_optional("scale", AttrType::Float), attr_int("causal", 0)};
  s.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, kFloats);
    require_same_dtype(ctx, "Q, K, V and Mask");
    require_rank(ctx, 0, 4, "Q", "B,H,Sq,D");
    require_rank(ctx, 1, 4, "K", "B,H,Skv,D");
    require_rank(ctx, 2, 4, "V", "B,H,Skv,Dv");
    const Shape &q = ctx.shape(0), &k = ctx.shape(1), &v = ctx.shape(2);
    if (k[0] != q[0] || k[1] != q[1] || v[0] != q[0] || v[1] != q[1])
      throw ShapeError(str("[ScaledDotProductAttention] Q, K and V should share B and H, got Q ",
                           shape_str(q), ", K ", shape_str(k), ", V ", shape_str(v)));
    if (k[3] != q[3])
      throw ShapeError(str("[ScaledDotProductAttention] K's last axis should equal Q's (D = ", q[3],
                           "), got K ", shape_str(k)));
    if (v[2] != k[2])
      throw ShapeError(str("[ScaledDotProductAttention] V should have as many keys as K (Skv = ", k[2],
                           "), got V ", shape_str(v)));
    Shape scores{q[0], q[1], q[2], k[2]};
    if (ctx.has_input(3)) {
      const Shape& m = ctx.shape(3);
      bool ok = m.size() <= 4;
      for (size_t i = 0; ok && i < m.size(); ++i) {
        int64_t want = scores[4 - m.size() + i];
        ok = m[i] == want || m[i] == 1;
      }
      if (!ok)
        throw ShapeError(str("[ScaledDotProductAttention] Mask should broadcast to B,H,Sq,Skv = ",
                             shape_str(scores), ", got ", shape_str(m)));
    }
    int64_t causal = ctx.attrs->get_int("causal");
    if (causal != 0 && causal != 1)
      throw InvalidModel(str("[ScaledDotProductAttention] causal should be 0 or 1, got ", causal));
    ctx.set_output(0, {q[0], q[1], q[2], v[3]}, ctx.dtype(0));
  };
  s.reference = [](KernelContext& ctx) {
    const Shape &q = ctx.in(0).shape(), &k = ctx.in(1).shape(), &v = ctx.in(2).shape();
    int64_t B = q[0], H = q[1], Sq = q[2], D = q[3], Skv = k[2], Dv = v[3];
    Shape scores_shape{B, H, Sq, Skv};
    Tensor mask = ctx.has_input(3) ? ctx.in(3).expand(scores_shape).contiguous() : Tensor();
    double scale = scale_of(*ctx.attrs, D);
    bool causal = ctx.attrs->get_int("causal") != 0;
    const double *pq = ctx.in(0).data<double>(), *pk = ctx.in(1).data<double>(), *pv = ctx.in(2).data<double>();
    double* y = ctx.out(0).data<double>();
    std::vector<double> p(static_cast<size_t>(Skv));
    for (int64_t bh = 0; bh < B * H; ++bh) {
      for (int64_t i = 0; i < Sq; ++i) {
        const double* qi = pq + (bh * Sq + i) * D;
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Skv; ++j) {
          double dot = 0;
          for (int64_t t = 0; t < D; ++t) dot += qi[t] * pk[(bh * Skv + j) * D + t];
          double sc = dot * scale;
          if (mask.defined()) sc += mask.data<double>()[(bh * Sq + i) * Skv + j];
          if (causal && j > i) sc = -std::numeric_limits<double>::infinity();
          p[j] = sc;
          mx = std::max(mx, sc);
        }
        double sum = 0;
        for (int64_t j = 0; j < Skv; ++j) sum += (p[j] = std::exp(p[j] - mx));
        double* yi = y + (bh * Sq + i) * Dv;
        for (int64_t t = 0; t < Dv; ++t) {
          double acc = 0;
          for (int64_t j = 0; j < Skv; ++j) acc += p[j] / sum * pv[(bh * Skv + j) * Dv + t];
          yi[t] = acc;
        }
      }
    }
  };
  // MatMul(Q, K^T) * scale (+ Mask) (+ causal mask: a constant of 0 / -inf), Softmax, MatMul V.
  s.composite = [](GraphBuilder& b, std::span<const ValueId> in, const Attributes& a) {
    ValueId q = in[0], k = in[1], v = in[2];
    DType dt = b.dtype(q);
    // Copies: the builder's shape references do not survive adding nodes.
    const Shape qs = b.shape(q), ks = b.shape(k);
    int64_t Sq = qs[2], Skv = ks[2];
    ValueId kt = b.add1("Transpose", {k}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
    ValueId scores = b.add1("MatMul", {q, kt});
    scores = b.add1("Mul", {scores, scalar_constant(b, scale_of(a, qs[3]), dt)});
    if (in.size() > 3 && in[3] >= 0) scores = b.add1("Add", {scores, in[3]});
    if (a.get_int("causal") != 0) {
      std::vector<double> bias(static_cast<size_t>(Sq * Skv), 0.0);
      for (int64_t i = 0; i < Sq; ++i)
        for (int64_t j = i + 1; j < Skv; ++j) bias[i * Skv + j] = -std::numeric_limits<double>::infinity();
      scores = b.add1("Add", {scores, b.constant(Tensor::from_values(bias, {Sq, Skv}, dt))});
    }
    ValueId probs = b.add1("Softmax", {scores}, {{"axis", int64_t{-1}}});
    return std::vector<ValueId>{b.add1("MatMul", {probs, v})};
  };
  s.cases = [] {
    std::vector<OpCase> c;
    Attributes causal{{"causal", int64_t{1}}};
    c.push_back({"basic", {in({2, 3, 5, 8}), in({2, 3, 7, 8}), in({2, 3, 7, 8})}, {}, kF32 | kF64});
    c.push_back({"causal_square", {in({1, 2, 9, 16}), in({1, 2, 9, 16}), in({1, 2, 9, 16})}, causal, kF32 | kF64});
    c.push_back({"causal_long_q", {in({1, 2, 11, 8}), in({1, 2, 6, 8}), in({1, 2, 6, 12})}, causal, kF32});
    c.push_back({"causal_long_kv", {in({2, 1, 5, 8}), in({2, 1, 77, 8}), in({2, 1, 77, 8})}, causal, kF32});
    c.push_back({"dv_differs", {in({1, 2, 4, 24}), in({1, 2, 13, 24}), in({1, 2, 13, 40})}, {}, kF32});
    c.push_back({"mask_full", {in({2, 2, 5, 8}), in({2, 2, 6, 8}), in({2, 2, 6, 8}), in({2, 2, 5, 6}, -3, 3)}, {}, kF32 | kF64});
    c.push_back({"mask_broadcast", {in({2, 3, 7, 16}), in({2, 3, 33, 16}), in({2, 3, 33, 16}), in({1, 1, 7, 33}, -3, 3)}, {}, kF32});
    c.push_back({"mask_key_row", {in({1, 4, 3, 8}), in({1, 4, 70, 8}), in({1, 4, 70, 8}), in({70}, -3, 3)},
                 {{"scale", 0.3}}, kF32});
    c.push_back({"mask_and_causal", {in({1, 2, 9, 8}), in({1, 2, 9, 8}), in({1, 2, 9, 8}), in({9, 9}, -2, 2)}, causal, kF32});
    c.push_back({"scale", {in({1, 1, 3, 5}), in({1, 1, 4, 5}), in({1, 1, 4, 3})}, {{"scale", 0.125}}, kF32 | kF64});
    c.push_back({"head_dim_128", {in({1, 2, 20, 128}), in({1, 2, 150, 128}), in({1, 2, 150, 128})}, causal, kF32});
    c.push_back({"head_dim_160", {in({1, 1, 6, 160}), in({1, 1, 9, 160}), in({1, 1, 9, 160})}, {}, kF32});
    // Several query and key blocks of the fused kernel (128 x 512), ragged at both ends.
    c.push_back({"blocks_mask", {in({1, 2, 131, 16}), in({1, 2, 1100, 16}), in({1, 2, 1100, 8}), in({131, 1100}, -3, 3)},
                 {}, kF32});
    c.push_back({"blocks_causal", {in({1, 1, 600, 32}), in({1, 1, 600, 32}), in({1, 1, 600, 32})}, causal, kF32});
    c.push_back({"one_key", {in({1, 1, 4, 8}), in({1, 1, 1, 8}), in({1, 1, 1, 8})}, {}, kF32});
    c.push_back({"no_queries", {in({1, 2, 0, 8}), in({1, 2, 5, 8}), in({1, 2, 5, 8})}, {}, kF32});
    OpCase big{"B1_H8_S1024_D64_causal", {in({1, 8, 1024, 64}), in({1, 8, 1024, 64}), in({1, 8, 1024, 64})}, causal, kF32};
    big.perf = true;
    c.push_back(big);
    OpCase big_full{"B1_H8_S1024_D64", {in({1, 8, 1024, 64}), in({1, 8, 1024, 64}), in({1, 8, 1024, 64})}, {}, kF32};
    big_full.perf = true;
    c.push_back(big_full);
    return c;
  };
  s.flops = [](const std::vector<Shape>& ins, const std::vector<Shape>& outs, const Attributes&) {
    const Shape &q = ins.at(0), &k = ins.at(1), &v = ins.at(2);
    double bh = static_cast<double>(q[0] * q[1]), sq = static_cast<double>(q[2]), skv = static_cast<double>(k[2]);
    return bh * sq * skv * (2.0 * static_cast<double>(q[3]) + 2.0 * static_cast<double>(v[3]) + 4.0);
  };
  return s;
}

}  // namespace porta::opdef
