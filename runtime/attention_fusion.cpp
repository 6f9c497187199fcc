// Attention rewrite (runtime/graph_fusion.hpp, fuse_attention): exporters write scaled
// dot-product attention as its pieces — MatMul(Q, K^T), a scale, an additive mask, Softmax over
// the keys, MatMul(., V) — which materialise the [.., Sq, Skv] score matrix twice and cost a
// node each. The pattern becomes one ScaledDotProductAttention (ai.porta), whose kernels keep
// scores per block of queries and take the session's low precision inside.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <numeric>
#include <vector>

#include "ops/custom_common.hpp"
#include "porta/dispatch.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

bool is_onnx(const Node& n, const char* name, size_t inputs) {
  return n.op->domain.empty() && n.op->name == name && n.inputs.size() == inputs && n.outputs.size() == 1 &&
         n.outputs[0] >= 0 && std::all_of(n.inputs.begin(), n.inputs.end(), [](int v) { return v >= 0; });
}

struct Uses {
  std::vector<int> consumers;
  std::vector<bool> is_output;
  // Read by one node alone and no graph output: a value the rewrite may make disappear.
  bool is_private(int v) const { return v >= 0 && consumers[v] == 1 && !is_output[v]; }
};

// The value of a constant scalar, or of one the plan's folding computed (annotated graphs).
std::optional<double> scalar_of(const Graph& g, int v) {
  if (std::optional<double> c = constant_scalar(g, v)) return c;
  const Tensor& f = g.values[v].folded;
  if (f.defined() && f.numel() == 1 && dtype_in(kFloats, f.dtype())) return f.to_doubles().at(0);
  return std::nullopt;
}

// Whether node `n` passes its input 0 through unchanged in inference: Identity, or a Dropout
// whose mask nothing reads and that is the identity for sure (no training_mode, or a constant
// false one, or a constant ratio 0; porta refuses a training Dropout that drops anything).
bool passes_through(const Graph& g, const Node& n) {
  if (!n.op->domain.empty() || n.outputs.empty() || n.outputs[0] < 0 || n.inputs.empty() || n.inputs[0] < 0)
    return false;
  if (n.op->name == "Identity") return n.inputs.size() == 1 && n.outputs.size() == 1;
  if (n.op->name != "Dropout" || (n.outputs.size() > 1 && n.outputs[1] >= 0)) return false;
  if (n.inputs.size() < 3 || n.inputs[2] < 0) return true;
  const Tensor* training = constant_tensor(g, n.inputs[2]);
  if (training && training->numel() == 1 && training->to_doubles().at(0) == 0.0) return true;
  std::optional<double> ratio = n.inputs[1] >= 0 ? constant_scalar(g, n.inputs[1]) : std::nullopt;
  return ratio && *ratio == 0.0;
}

// `v` = Mul(x, c), Mul(c, x) or Div(x, c) with c a finite constant scalar that leaves x's shape
// as it is: {x, the factor, the node}.
struct Scaling {
  int x = -1;
  double factor = 1;
  int node = -1;
};
std::optional<Scaling> scaling_of(const Graph& g, int v) {
  const int p = g.values[v].producer;
  if (p < 0) return std::nullopt;
  const Node& n = g.nodes[p];
  const bool mul = is_onnx(n, "Mul", 2), div = is_onnx(n, "Div", 2);
  if (!mul && !div) return std::nullopt;
  for (int side = 0; side < (mul ? 2 : 1); ++side) {
    const int x = n.inputs[side], c = n.inputs[1 - side];
    std::optional<double> s = scalar_of(g, c);
    if (!s || !std::isfinite(*s) || (div && *s == 0.0)) continue;
    const Shape *xs = known_shape(g, x), *ys = known_shape(g, v);
    if (!xs || !ys || *xs != *ys || dtype_of(g, x) != dtype_of(g, v)) continue;
    return Scaling{x, div ? 1.0 / *s : *s, p};
  }
  return std::nullopt;
}

// One attention pattern, found from its Softmax.
struct AttentionMatch {
  std::vector<int> dropped;  // the pattern's nodes but the last MatMul, which the fusion replaces
  int pv = -1;               // MatMul(P, V)
  int q = -1, k_source = -1, v = -1, mask = -1;
  std::vector<int64_t> k_perm;  // K = Transpose(k_source, k_perm); empty: K is k_source
  double scale = 1;
  size_t rank = 0;
  DType dtype = DType::f32;
  // Windowed attention's second mask (swin's shifted windows): added to the scores viewed as
  // [B, nW, ...] (their first axis split), -1 when none.
  int window_mask = -1;
  int64_t windows_b = 0, windows_n = 0;
};

bool identity_perm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// Whether `mask` (right-aligned) broadcasts to the score shape `scores` without growing it.
bool broadcasts_to(const Shape& mask, const Shape& scores) {
  if (mask.size() > scores.size()) return false;
  for (size_t i = 0; i < mask.size(); ++i) {
    const int64_t want = scores[scores.size() - mask.size() + i];
    if (mask[i] != want && mask[i] != 1) return false;
  }
  return true;
}

// The Einsum forms of attention's two products over the same leading axes (any letters, spaces
// ignored, no ellipsis): the scores Q K^T, "<lead>id,<lead>jd-><lead>ij", and the weighted sum
// P V, "<lead>ij,<lead>jd-><lead>id" (MaxViT's export).
enum class EinsumForm { none, scores, weighted_sum };
EinsumForm einsum_form(const Node& n) {
  if (!is_onnx(n, "Einsum", 2)) return EinsumForm::none;
  std::string eq;
  for (char c : n.attrs.get_string("equation", "")) if (c != ' ') eq.push_back(c);
  const size_t arrow = eq.find("->"), comma = eq.find(',');
  if (arrow == std::string::npos || comma == std::string::npos || comma > arrow) return EinsumForm::none;
  const std::string a = eq.substr(0, comma), b = eq.substr(comma + 1, arrow - comma - 1), o = eq.substr(arrow + 2);
  const size_t len = a.size();
  if (len < 2 || b.size() != len || o.size() != len) return EinsumForm::none;
  for (const std::string* t : {&a, &b, &o})
    for (char c : *t)
      if (!std::isalpha(static_cast<unsigned char>(c))) return EinsumForm::none;
  const std::string lead = a.substr(0, len - 2);
  if (b.compare(0, len - 2, lead) != 0 || o.compare(0, len - 2, lead) != 0) return EinsumForm::none;
  std::string seen = lead;
  std::sort(seen.begin(), seen.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) return EinsumForm::none;
  const char a1 = a[len - 2], a2 = a[len - 1], b1 = b[len - 2], b2 = b[len - 1], o1 = o[len - 2], o2 = o[len - 1];
  for (char c : {a1, a2, b1, b2})
    if (lead.find(c) != std::string::npos) return EinsumForm::none;
  if (a1 == a2 || b1 == b2) return EinsumForm::none;
  if (a2 == b2 && a1 != b1 && o1 == a1 && o2 == b1) return EinsumForm::scores;
  if (a2 == b1 && a1 != b2 && o1 == a1 && o2 == b2) return EinsumForm::weighted_sum;
  return EinsumForm::none;
}

// Reshape(Add(Reshape(S, [B, nW, rest]), M), back to S's shape) = `x`, with S [B * nW, rest]
// read by that Reshape alone: the window mask M of swin's shifted windows (broadcast to
// [B, nW, rest], not widening it). {S, M, B, nW, the three nodes}, or none.
struct WindowMask {
  int inner = -1, mask = -1;
  int64_t b = 0, n = 0;
  std::vector<int> nodes;
};
std::optional<WindowMask> window_mask_of(const Graph& g, int x, const Uses& uses) {
  const int back = g.values[x].producer;
  if (back < 0 || !is_onnx(g.nodes[back], "Reshape", 2)) return std::nullopt;
  const int sum = g.nodes[back].inputs[0], add = g.values[sum].producer;
  if (!uses.is_private(sum) || add < 0 || !is_onnx(g.nodes[add], "Add", 2)) return std::nullopt;
  const Shape *xs = known_shape(g, x), *ss = known_shape(g, sum);
  if (!xs || !ss || xs->empty() || ss->size() != xs->size() + 1) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const int split = g.nodes[add].inputs[side], mask = g.nodes[add].inputs[1 - side];
    const int there = g.values[split].producer;
    if (split == mask || !uses.is_private(split) || there < 0 || !is_onnx(g.nodes[there], "Reshape", 2)) continue;
    const int inner = g.nodes[there].inputs[0];
    const Shape *is = known_shape(g, inner), *ps = known_shape(g, split), *ms = known_shape(g, mask);
    if (!is || !ps || !ms || *is != *xs || *ps != *ss || !uses.is_private(inner)) continue;
    if ((*ps)[0] * (*ps)[1] != (*is)[0] || !std::equal(ps->begin() + 2, ps->end(), is->begin() + 1)) continue;
    if (!broadcasts_to(*ms, *ps) || dtype_of(g, mask) != dtype_of(g, x)) continue;
    return WindowMask{inner, mask, (*ps)[0], (*ps)[1], {back, add, there}};
  }
  return std::nullopt;
}

std::optional<AttentionMatch> match_at(const Graph& g, size_t s, const Uses& uses) {
  const Node& softmax = g.nodes[s];
  if (!is_onnx(softmax, "Softmax", 1)) return std::nullopt;
  AttentionMatch m;
  const int x = softmax.inputs[0], p = softmax.outputs[0];
  const Shape* xs = known_shape(g, x);
  if (!xs || xs->size() < 2) return std::nullopt;
  m.rank = xs->size();
  const int64_t axis = softmax.attrs.get_int("axis", -1);
  if (axis != -1 && axis != static_cast<int64_t>(m.rank) - 1) return std::nullopt;
  m.dropped.push_back(static_cast<int>(s));
  // P = Softmax(.) is read by MatMul(P, V) alone.
  if (!uses.is_private(p)) return std::nullopt;
  // (Through an Identity or an inference Dropout: swin_t's attention dropout.)
  int probs = p;
  for (size_t i = s + 1; i < g.nodes.size() && m.pv < 0; ++i) {
    const Node& n = g.nodes[i];
    if (std::find(n.inputs.begin(), n.inputs.end(), probs) == n.inputs.end()) continue;
    if (probs == p && passes_through(g, n) && n.inputs[0] == p && uses.is_private(n.outputs[0])) {
      m.dropped.push_back(static_cast<int>(i));
      probs = n.outputs[0];
      continue;
    }
    m.pv = static_cast<int>(i);
  }
  if (m.pv < 0) return std::nullopt;
  const Node& pv = g.nodes[m.pv];
  if ((!is_onnx(pv, "MatMul", 2) && einsum_form(pv) != EinsumForm::weighted_sum) || pv.inputs[0] != probs ||
      pv.inputs[1] == probs)
    return std::nullopt;
  m.v = pv.inputs[1];
  // The scores: [Add(., mask) of] [a scaling of] MatMul(Q', K'^T) or Einsum(Q', K'), [with a
  // window mask added to them reshaped as [B, nW, ...] and reshaped back].
  if (!uses.is_private(x)) return std::nullopt;
  int scores = x;
  if (auto w = window_mask_of(g, x, uses)) {
    m.window_mask = w->mask;
    m.windows_b = w->b;
    m.windows_n = w->n;
    m.dropped.insert(m.dropped.end(), w->nodes.begin(), w->nodes.end());
    scores = w->inner;
  }
  auto product_of = [&](int v, double& factor, std::vector<int>& nodes) -> int {
    if (!uses.is_private(v)) return -1;
    if (auto sc = scaling_of(g, v)) {
      if (!uses.is_private(sc->x)) return -1;
      factor *= sc->factor;
      nodes.push_back(sc->node);
      v = sc->x;
    }
    const int producer = g.values[v].producer;
    if (producer < 0 || (!is_onnx(g.nodes[producer], "MatMul", 2) && einsum_form(g.nodes[producer]) != EinsumForm::scores))
      return -1;
    nodes.push_back(producer);
    return producer;
  };
  int qk = -1;
  const int xp = g.values[scores].producer;
  if (xp < 0) return std::nullopt;
  if (is_onnx(g.nodes[xp], "Add", 2) && g.nodes[xp].inputs[0] != g.nodes[xp].inputs[1]) {
    for (int side = 0; side < 2 && qk < 0; ++side) {
      double factor = 1;
      std::vector<int> nodes;
      qk = product_of(g.nodes[xp].inputs[side], factor, nodes);
      if (qk < 0) continue;
      m.mask = g.nodes[xp].inputs[1 - side];
      m.scale = factor;
      m.dropped.push_back(xp);
      m.dropped.insert(m.dropped.end(), nodes.begin(), nodes.end());
    }
  }
  if (qk < 0) {
    std::vector<int> nodes;
    m.scale = 1;
    qk = product_of(scores, m.scale, nodes);
    m.dropped.insert(m.dropped.end(), nodes.begin(), nodes.end());
  }
  if (qk < 0) return std::nullopt;
  const Node& product = g.nodes[qk];
  // Scalings of either operand of the product fold into the scale too.
  const bool einsum = product.op->name == "Einsum";  // Q K^T from K itself
  m.q = product.inputs[0];
  int kt = product.inputs[1];
  if (m.q == kt) return std::nullopt;
  for (int* operand : {&m.q, &kt})
    if (uses.is_private(*operand))
      if (auto sc = scaling_of(g, *operand)) {
        m.scale *= sc->factor;
        m.dropped.push_back(sc->node);
        *operand = sc->x;
      }
  const size_t r = m.rank;
  Shape ks;  // K's shape [.., Skv, D]
  if (einsum) {
    m.k_source = kt;
    const Shape* k_shape = known_shape(g, kt);
    if (!k_shape) return std::nullopt;
    ks = *k_shape;
  } else {
    // K^T: a Transpose of some X becomes one Transpose of X into K (none when that is X itself).
    const Shape* kts = known_shape(g, kt);
    if (!kts || kts->size() != r) return std::nullopt;
    ks = *kts;
    std::swap(ks[r - 1], ks[r - 2]);
    std::vector<int64_t> swap(r);
    std::iota(swap.begin(), swap.end(), 0);
    std::swap(swap[r - 1], swap[r - 2]);
    const int tp = g.values[kt].producer;
    if (tp >= 0 && uses.is_private(kt) && is_onnx(g.nodes[tp], "Transpose", 1)) {
      std::vector<int64_t> perm = g.nodes[tp].attrs.get_ints("perm", {});
      if (perm.size() != r) return std::nullopt;
      for (int64_t& a : perm) a = a < 0 ? a + static_cast<int64_t>(r) : a;
      std::swap(perm[r - 1], perm[r - 2]);
      m.k_source = g.nodes[tp].inputs[0];
      if (!identity_perm(perm)) m.k_perm = perm;
      m.dropped.push_back(tp);
    } else {
      m.k_source = kt;
      m.k_perm = swap;
    }
  }
  // Shapes: Q [.., Sq, D], K [.., Skv, D], V [.., Skv, Dv], the same leading axes; the mask
  // broadcasts to the scores, which keep the product's shape.
  const Shape *qs = known_shape(g, m.q), *vs = known_shape(g, m.v), *us = known_shape(g, product.outputs[0]);
  if (!qs || !vs || !us || qs->size() != r || ks.size() != r || vs->size() != r || *us != *xs) return std::nullopt;
  for (size_t i = 0; i + 2 < r; ++i)
    if ((*qs)[i] != ks[i] || (*qs)[i] != (*vs)[i]) return std::nullopt;
  if ((*qs)[r - 1] != ks[r - 1] || ks[r - 2] != (*vs)[r - 2]) return std::nullopt;
  m.dtype = dtype_of(g, m.q);
  if (!dtype_in(kFloats, m.dtype) || dtype_of(g, m.k_source) != m.dtype || dtype_of(g, m.v) != m.dtype)
    return std::nullopt;
  if (m.mask >= 0) {
    const Shape* ms = known_shape(g, m.mask);
    if (!ms || !broadcasts_to(*ms, *xs) || dtype_of(g, m.mask) != m.dtype) return std::nullopt;
    // Past rank 4 the leading axes merge into the op's B: a mask may only vary along the
    // last three (H, Sq, Skv); one of rank 5 or more is read as those three.
    if (r > 4)
      for (size_t i = 0; i + 3 < ms->size(); ++i)
        if ((*ms)[i] != 1) return std::nullopt;
  }
  return m;
}

// [B, H, S, D] for the fused op from an operand of rank r: rank 2 [S, D] -> [1, 1, S, D], rank 3
// [G, S, D] -> [1, G, S, D], rank 5 and up: every axis before the last three merged into B.
Shape as_rank4(const Shape& s) {
  const size_t r = s.size();
  if (r == 2) return {1, 1, s[0], s[1]};
  if (r == 3) return {1, s[0], s[1], s[2]};
  int64_t b = 1;
  for (size_t i = 0; i + 3 < r; ++i) b *= s[i];
  return {b, s[r - 3], s[r - 2], s[r - 1]};
}

// How many images the leading axis G of a rank-3 operand [G, S, D] holds, when it is PyTorch's
// nn.MultiheadAttention head split: Transpose(perm 1, 0, 2) of a Reshape of [S, B, E] to
// [S, G, D], B images of G / B heads each (1 when the producers are anything else). The fused
// op then takes [B, G / B, S, D]: each of its axes one stride of the projection the split
// reads, so a session can hand it q, k and v where they lie (Compiler::read_chains_in_place)
// instead of copying each head split.
int64_t images_of_heads(const Graph& g, int v) {
  const Shape* vs = known_shape(g, v);
  const int tp = g.values[v].producer;
  if (!vs || vs->size() != 3 || tp < 0 || !is_onnx_op(g.nodes[tp], "Transpose", 1)) return 1;
  const Node& t = g.nodes[tp];
  if (!t.attrs.has("perm") || t.attrs.get_ints("perm") != std::vector<int64_t>{1, 0, 2}) return 1;
  const int split = t.inputs[0], rp = g.values[split].producer;
  if (rp < 0 || !is_onnx_op(g.nodes[rp], "Reshape")) return 1;
  const Shape *ss = known_shape(g, split), *xs = known_shape(g, g.nodes[rp].inputs[0]);
  if (!ss || !xs || ss->size() != 3 || xs->size() != 3) return 1;
  const int64_t groups = (*vs)[0], d = (*vs)[2], b = (*xs)[1];
  if ((*xs)[0] != (*ss)[0] || b < 1 || groups % b != 0 || d < 1 || (*xs)[2] % d != 0 || b * ((*xs)[2] / d) != groups)
    return 1;
  return b;
}

// The nodes replacing the pattern's last product: K's Transpose, Reshapes (views) of operands
// of another rank than 4 to [B, H, S, D] and of the result back, the ScaledDotProductAttention.
std::vector<Node> fused_nodes(Graph& g, const AttentionMatch& m) {
  const Node pv = g.nodes[m.pv];
  const std::string base = pv.name + "/porta_attention";
  std::vector<Node> nodes;
  auto shape_of = [&](int v) { return *known_shape(g, v); };
  int k = m.k_source;
  if (!m.k_perm.empty()) {
    Shape src = shape_of(k), ks(src.size());
    for (size_t i = 0; i < ks.size(); ++i) ks[i] = src[static_cast<size_t>(m.k_perm[i])];
    const int kv = new_value(g, base + "/K", m.dtype, ks);
    nodes.push_back(new_node("", "Transpose", base + "/Transpose_K", {k}, {kv}, {{"perm", m.k_perm}}));
    k = kv;
  }
  int q = m.q, v = m.v;
  const int y = pv.outputs[0];
  int y4 = y;
  auto reshaped = [&](int value, const std::string& what, const Shape& to) {
    const int target = constant_shape(g, str(base, "/", what, "_shape"), to);
    const int out = new_value(g, str(base, "/", what, "4"), m.dtype, to);
    nodes.push_back(new_node("", "Reshape", str(base, "/Reshape_", what), {value, target}, {out}, exact_reshape()));
    return out;
  };
  // Rank 3: [G, S, D] as [B, G / B, S, D], B from the head split (images_of_heads), else 1.
  const int64_t images = m.rank == 3 && m.window_mask < 0 ? images_of_heads(g, m.q) : 1;
  auto rank4 = [&](const Shape& s) {
    Shape r4 = as_rank4(s);
    if (images > 1) r4[0] = images, r4[1] /= images;
    return r4;
  };
  if (m.rank != 4) {
    q = reshaped(q, "Q", rank4(shape_of(q)));
    k = reshaped(k, "K", rank4(shape_of(k)));
    v = reshaped(v, "V", rank4(shape_of(v)));
    y4 = new_value(g, base + "/Y4", m.dtype, rank4(shape_of(y)));
  }
  int mask = m.mask;
  if (images > 1 && mask >= 0) {
    // A mask along G ([G, Sq, Skv], [1, G, ...] cannot broadcast to rank 3) follows it.
    const Shape ms = shape_of(mask);
    if (ms.size() == 3 && ms[0] != 1) mask = reshaped(mask, "Mask", rank4(ms));
  }
  if (m.window_mask >= 0) {
    // One mask for the windows: the first mask (if any) viewed over [B, nW, rest], plus the
    // window mask, expanded along B and nW and merged back to [B * nW, rest].
    const size_t r = m.rank;
    auto aligned = [&](Shape sh) {
      sh.insert(sh.begin(), r + 1 - sh.size(), 1);
      return sh;
    };
    Shape sum_shape = aligned(shape_of(m.window_mask));
    int sum = m.window_mask;
    if (mask >= 0) {
      Shape ms = shape_of(mask);
      if (ms.size() == r) {
        const int64_t lead = ms[0];
        ms.erase(ms.begin());
        ms.insert(ms.begin(), {lead == 1 ? 1 : m.windows_b, lead == 1 ? 1 : m.windows_n});
      } else {
        ms = aligned(ms);
      }
      const int first = reshaped(mask, "Mask", ms);
      for (size_t i = 0; i <= r; ++i) sum_shape[i] = sum_shape[i] == 1 ? ms[i] : sum_shape[i];
      sum = new_value(g, base + "/WindowMasks", m.dtype, sum_shape);
      nodes.push_back(new_node("", "Add", base + "/Add_WindowMasks", {first, m.window_mask}, {sum}));
    }
    Shape grid(r + 1, 1), expanded_shape = sum_shape;
    grid[0] = expanded_shape[0] = m.windows_b;
    grid[1] = expanded_shape[1] = m.windows_n;
    const int expanded = new_value(g, base + "/WindowMaskExpanded", m.dtype, expanded_shape);
    nodes.push_back(new_node("", "Expand", base + "/Expand_WindowMask",
                             {sum, constant_shape(g, base + "/WindowGrid", grid)}, {expanded}));
    Shape merged(expanded_shape.begin() + 1, expanded_shape.end());
    merged[0] = m.windows_b * m.windows_n;
    mask = reshaped(expanded, "WindowMask", merged);
  }
  Attributes attrs{{"scale", m.scale}};
  std::vector<int> inputs{q, k, v};
  if (mask >= 0) {
    const Shape ms = shape_of(mask);
    inputs.push_back(ms.size() > 4 ? reshaped(mask, "MaskRows", Shape(ms.end() - 3, ms.end())) : mask);
  }
  nodes.push_back(new_node(opdef::kPortaDomain, "ScaledDotProductAttention", base, inputs, {y4}, attrs));
  if (m.rank != 4) {
    const int target = constant_shape(g, base + "/Y_shape", shape_of(y));
    nodes.push_back(new_node("", "Reshape", base + "/Reshape_Y", {y4, target}, {y}, exact_reshape()));
  }
  return nodes;
}

}  // namespace

bool attention_candidates(const Graph& g) {
  std::vector<bool> probabilities(g.values.size(), false);  // a Softmax's output, or it passed through
  for (const Node& n : g.nodes) {
    if (!n.op->domain.empty() || n.outputs.empty() || n.outputs[0] < 0) continue;
    if (n.op->name == "Softmax") probabilities[n.outputs[0]] = true;
    if (n.inputs.empty() || n.inputs[0] < 0 || !probabilities[n.inputs[0]]) continue;
    if (n.op->name == "MatMul" || n.op->name == "Einsum") return true;
    if (passes_through(g, n)) probabilities[n.outputs[0]] = true;
  }
  return false;
}

std::shared_ptr<const Graph> fuse_attention(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* sdpa = find_op(opdef::kPortaDomain, "ScaledDotProductAttention");
  if (!sdpa) return graph;
  const Graph& g = *graph;
  Uses uses{consumer_counts(g), graph_output_flags(g)};
  std::vector<AttentionMatch> matches;
  std::vector<bool> taken(g.nodes.size(), false);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<AttentionMatch> m = match_at(g, i, uses);
    // Only where the device runs the fused op itself for this dtype: elsewhere it would run
    // as its composite (the same nodes again) or on another device.
    if (!m || resolve(*sdpa, device, m->dtype).path != Path::native) continue;
    bool overlaps = taken[m->pv];
    for (int n : m->dropped) overlaps = overlaps || taken[n];
    if (overlaps) continue;
    taken[m->pv] = true;
    for (int n : m->dropped) taken[n] = true;
    matches.push_back(std::move(*m));
  }
  if (matches.empty()) return graph;
  auto out = std::make_shared<Graph>(g);
  std::vector<bool> drop(g.nodes.size(), false);
  std::vector<int> read_by_dropped;
  std::vector<std::vector<Node>> replacement(g.nodes.size());
  for (const AttentionMatch& m : matches) {
    for (int n : m.dropped) {
      drop[n] = true;
      for (int v : g.nodes[n].inputs) read_by_dropped.push_back(v);
    }
    for (int v : g.nodes[m.pv].inputs) read_by_dropped.push_back(v);
    replacement[m.pv] = fused_nodes(*out, m);
    drop[m.pv] = true;
  }
  // Constants the new nodes read stay (a constant mask or V).
  for (const auto& nodes : replacement)
    for (const Node& n : nodes)
      for (int v : n.inputs) std::erase(read_by_dropped, v);
  drop_unread_constants(*out, read_by_dropped, drop);
  splice_nodes(*out, replacement, drop);  // in the last MatMul's place
  return out;
}

}  // namespace porta::detail
