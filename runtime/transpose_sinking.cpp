// Transposes moved across row-wise products (runtime/graph_fusion.hpp, move_row_transposes).
//
// A product with one 2-D weight (MatMul(A, W), Gemm(A, W, c) with transA = 0 and a bias row c)
// treats every leading axis of A as rows: permuting those axes before the product or after it
// gives the same numbers. PyTorch's nn.MultiheadAttention with batch_first = True (BERT-style
// encoders, torchvision's ViT) exports a transpose on each side of its projections:
//   x [B, S, D] -> Transpose(1, 0, 2) -> MatMul(in_proj) -> Slice q, k, v -> Reshape -> Transpose
//   attn -> Transpose -> Reshape -> Gemm(out_proj) -> Reshape [S, B, D] -> Transpose(1, 0, 2)
// Each Transpose is a whole copy (on a Vulkan device a whole dispatch). Moved to the side where
// other data-movement nodes already copy, it joins their chain (runtime/session_moves.cpp),
// which runs as one strided copy:
// - forward: a Transpose whose one reader is such a product, and whose product is read only by
//   Slice, Transpose and Reshape nodes, moves after the product;
// - backward: a Transpose that reaches such a product's output through Reshapes that keep the
//   last axis (each only regroups rows), when the product's A comes from a Transpose (through
//   views), moves before the product, onto A.
// Both run only on a device whose StridedCopy is native (elsewhere the chains stay copies).
#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "ops/custom_common.hpp"
#include "ops/shape_util.hpp"
#include "porta/dispatch.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

// v's shape when every dimension is known.
std::optional<Shape> shape_of(const Graph& g, int v) {
  const Shape* s = v < 0 ? nullptr : known_shape(g, v);
  if (!s) return std::nullopt;
  for (int64_t d : *s)
    if (d < 0) return std::nullopt;
  return *s;
}

// A Transpose's permutation when it keeps the last axis in place and moves some other (a
// permutation of rows only), else none.
std::optional<std::vector<int64_t>> row_perm(const Graph& g, const Node& t) {
  if (!is_onnx_op(t, "Transpose", 1) || t.inputs[0] < 0) return std::nullopt;
  const std::optional<Shape> in = shape_of(g, t.inputs[0]);
  if (!in || in->size() < 3) return std::nullopt;
  std::vector<int64_t> perm;
  try {
    perm = opdef::transpose_perm(in->size(), t.attrs.get_ints("perm", {}), "Transpose");
  } catch (const Error&) {
    return std::nullopt;
  }
  const int64_t last = static_cast<int64_t>(perm.size()) - 1;
  if (perm.back() != last) return std::nullopt;
  std::vector<int64_t> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (perm == identity) return std::nullopt;
  return perm;
}

// Whether node `p` is a row-wise product: MatMul(A, W[, bias]) with a 2-D W, or Gemm with
// transA = 0 and a C that is one row (or one value) for every row. Returns N (W's columns).
std::optional<int64_t> row_product(const Graph& g, const Node& p) {
  if (!p.op->domain.empty() || p.outputs.size() != 1 || p.outputs[0] < 0 || p.inputs.size() < 2 ||
      p.inputs[0] < 0 || p.inputs[1] < 0)
    return std::nullopt;
  const std::optional<Shape> w = shape_of(g, p.inputs[1]);
  if (!w || w->size() != 2) return std::nullopt;
  if (p.op->name == "MatMul") {
    for (size_t i = 3; i < p.inputs.size(); ++i)
      if (p.inputs[i] >= 0) return std::nullopt;  // only A, W and the fused bias row
    return (*w)[1];
  }
  if (p.op->name != "Gemm" || p.attrs.get_int("transA", 0) != 0) return std::nullopt;
  const int64_t n = p.attrs.get_int("transB", 0) != 0 ? (*w)[0] : (*w)[1];
  if (p.inputs.size() > 2 && p.inputs[2] >= 0) {
    const std::optional<Shape> c = shape_of(g, p.inputs[2]);
    if (!c || shape_numel(*c) > n) return std::nullopt;
    if (!(c->size() <= 1 || (c->size() == 2 && (*c)[0] == 1))) return std::nullopt;
  }
  for (size_t i = 3; i < p.inputs.size(); ++i)
    if (p.inputs[i] >= 0) return std::nullopt;
  return n;
}

bool is_shape_node(const Node& n) { return n.op->domain.empty() && n.op->name == "Shape"; }

// Per value: the node inputs reading it, other than Shape nodes'. PyTorch's export reads the
// shape of nearly every activation; with every shape known, those Shapes are constants.
std::vector<int> data_readers(const Graph& g) {
  std::vector<int> n(g.values.size(), 0);
  for (const Node& node : g.nodes)
    if (!is_shape_node(node))
      for (int v : node.inputs)
        if (v >= 0) ++n[static_cast<size_t>(v)];
  return n;
}

// The one node other than a Shape reading `v` (which is no graph output), or -1.
int sole_reader(const Graph& g, int v, const std::vector<int>& consumers, const std::vector<bool>& is_output,
                size_t from) {
  if (v < 0 || consumers[v] != 1 || is_output[v]) return -1;
  for (size_t i = from; i < g.nodes.size(); ++i)
    if (!is_shape_node(g.nodes[i]))
      for (int in : g.nodes[i].inputs)
        if (in == v) return static_cast<int>(i);
  return -1;
}

// The Shape nodes reading values the rewrite no longer computes become constants (the shapes
// are known); their nodes are dropped.
void fold_orphaned_shapes(Graph& out, const Graph& g, const std::vector<int>& orphaned, std::vector<bool>& drop) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!is_shape_node(n) || n.inputs.empty() || n.outputs.empty() || n.outputs[0] < 0 ||
        std::find(orphaned.begin(), orphaned.end(), n.inputs[0]) == orphaned.end())
      continue;
    const Shape& s = g.values[n.inputs[0]].shape;
    const auto rank = static_cast<int64_t>(s.size());
    auto clamp_axis = [&](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t{0}, rank); };
    const int64_t start = clamp_axis(n.attrs.get_int("start", 0));
    const int64_t end = clamp_axis(n.attrs.has("end") ? n.attrs.get_int("end", rank) : rank);
    std::vector<double> dims;
    for (int64_t a = start; a < end; ++a) dims.push_back(static_cast<double>(s[static_cast<size_t>(a)]));
    Value& v = out.values[n.outputs[0]];
    v.constant = Tensor::from_values(dims, {static_cast<int64_t>(dims.size())}, DType::i64);
    v.dtype = DType::i64;
    v.shape = {static_cast<int64_t>(dims.size())};
    v.shape_known = true;
    drop[i] = true;
  }
}

bool is_view_node(const Node& n) {
  return n.op->domain.empty() && (n.op->name == "Reshape" || n.op->name == "Flatten" || n.op->name == "Squeeze" ||
                                   n.op->name == "Unsqueeze");
}

// Whether `v` is a Transpose's output, directly or through single-reader views.
bool from_transpose(const Graph& g, int v, const std::vector<int>& consumers) {
  for (int hops = 0; v >= 0 && hops < 8; ++hops) {
    const int p = g.values[v].producer;
    if (p < 0 || consumers[v] != 1) return false;
    const Node& n = g.nodes[p];
    if (is_onnx_op(n, "Transpose", 1)) return true;
    if (!is_view_node(n) || n.inputs.empty()) return false;
    v = n.inputs[0];
  }
  return false;
}

Shape permuted(const Shape& s, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t a : perm) out.push_back(s[static_cast<size_t>(a)]);
  return out;
}

struct Plan {
  std::vector<bool> drop;
  std::vector<std::vector<Node>> before;  // nodes to insert in front of node i
  std::vector<int> orphaned;              // values no node computes any more
};

// Forward: Transpose t -> product p, the product read only by data-movement nodes.
bool move_forward(Graph& out, const Graph& g, size_t t, const std::vector<int>& consumers,
                  const std::vector<bool>& is_output, Plan& plan) {
  const Node& tr = g.nodes[t];
  const std::optional<std::vector<int64_t>> perm = row_perm(g, tr);
  if (!perm) return false;
  const int p = sole_reader(g, tr.outputs[0], consumers, is_output, t + 1);
  if (p < 0 || plan.drop[static_cast<size_t>(p)]) return false;
  const Node& prod = g.nodes[static_cast<size_t>(p)];
  const std::optional<int64_t> n = row_product(g, prod);
  if (!n || prod.op->name != "MatMul" || prod.inputs[0] != tr.outputs[0] || prod.inputs[1] == tr.outputs[0])
    return false;
  const int y = prod.outputs[0];
  const std::optional<Shape> x_shape = shape_of(g, tr.inputs[0]);
  const std::optional<Shape> y_shape = shape_of(g, y);
  // (The Transpose's output shape is what Shape nodes reading it fold to.)
  if (!x_shape || !y_shape || !shape_of(g, tr.outputs[0]) || is_output[y] || consumers[y] == 0 ||
      shape_numel(*y_shape) == 0)
    return false;
  for (size_t i = static_cast<size_t>(p) + 1; i < g.nodes.size(); ++i)
    for (int in : g.nodes[i].inputs)
      if (in == y && !is_shape_node(g.nodes[i])) {
        const Node& r = g.nodes[i];
        const bool movement = r.op->domain.empty() && (r.op->name == "Slice" || r.op->name == "Transpose" ||
                                                       r.op->name == "Reshape") && r.inputs[0] == y;
        if (!movement) return false;
      }
  Shape unpermuted = *x_shape;
  unpermuted.back() = *n;
  if (permuted(unpermuted, *perm) != *y_shape) return false;
  const int y0 = new_value(out, g.values[y].name + "/rows_unpermuted", dtype_of(g, y), unpermuted);
  Node moved = prod;
  moved.inputs[0] = tr.inputs[0];
  moved.outputs[0] = y0;
  Attributes attrs;
  attrs.set("perm", *perm);
  plan.before[static_cast<size_t>(p)].push_back(std::move(moved));
  plan.before[static_cast<size_t>(p)].push_back(new_node("", "Transpose", tr.name + "/after_product", {y0}, {y}, attrs));
  plan.drop[static_cast<size_t>(p)] = true;
  plan.drop[t] = true;
  plan.orphaned.push_back(tr.outputs[0]);
  return true;
}

// Backward: product p -> Reshapes keeping the last axis -> Transpose, A from a Transpose.
bool move_backward(Graph& out, const Graph& g, size_t p, const std::vector<int>& consumers,
                   const std::vector<bool>& is_output, Plan& plan) {
  const Node& prod = g.nodes[p];
  const std::optional<int64_t> n = row_product(g, prod);
  if (!n) return false;
  const int a = prod.inputs[0];
  const std::optional<Shape> a_shape = shape_of(g, a);
  if (!a_shape || a_shape->size() < 2 || (prod.op->name == "Gemm" && a_shape->size() != 2) ||
      shape_numel(*a_shape) == 0 || *n == 0 || !shape_of(g, prod.outputs[0]))
    return false;
  if (!from_transpose(g, a, consumers)) return false;
  std::vector<size_t> chain;
  int v = prod.outputs[0];
  std::optional<std::vector<int64_t>> perm;
  size_t t = 0;
  for (int hops = 0; hops < 8 && !perm; ++hops) {
    const int r = sole_reader(g, v, consumers, is_output, p + 1);
    if (r < 0 || plan.drop[static_cast<size_t>(r)]) return false;
    const Node& rn = g.nodes[static_cast<size_t>(r)];
    if (rn.inputs.empty() || rn.inputs[0] != v) return false;
    if (is_onnx_op(rn, "Transpose", 1)) {
      perm = row_perm(g, rn);
      if (!perm) return false;
      t = static_cast<size_t>(r);
      break;
    }
    if (!is_onnx_op(rn, "Reshape") || rn.outputs[0] < 0) return false;
    const std::optional<Shape> s = shape_of(g, rn.outputs[0]);
    if (!s || s->empty() || s->back() != *n) return false;
    chain.push_back(static_cast<size_t>(r));
    v = rn.outputs[0];
  }
  if (!perm) return false;
  const Node& tr = g.nodes[t];
  const std::optional<Shape> rows_in = shape_of(g, tr.inputs[0]);
  const std::optional<Shape> result = shape_of(g, tr.outputs[0]);
  if (!rows_in || !result) return false;
  const DType at = dtype_of(g, a);
  // A regrouped like the Transpose's input, permuted like its output.
  Shape a_rows = *rows_in;
  a_rows.back() = a_shape->back();
  const Shape a_perm = permuted(a_rows, *perm);
  const std::string base = tr.name + "/before_product";
  std::vector<Node>& nodes = plan.before[t];
  const int a_r = new_value(out, base + "/A_rows", at, a_rows);
  nodes.push_back(new_node("", "Reshape", base + "/Reshape_A", {a, constant_shape(out, base + "/A_rows_shape", a_rows)},
                           {a_r}, exact_reshape()));
  Attributes attrs;
  attrs.set("perm", *perm);
  const int a_t = new_value(out, base + "/A_permuted", at, a_perm);
  nodes.push_back(new_node("", "Transpose", base, {a_r}, {a_t}, attrs));
  Node moved = prod;
  if (prod.op->name == "Gemm") {
    const Shape flat{shape_numel(a_perm) / std::max<int64_t>(a_perm.back(), 1), a_perm.back()};
    const int a_2 = new_value(out, base + "/A_flat", at, flat);
    nodes.push_back(new_node("", "Reshape", base + "/Reshape_A_flat",
                             {a_t, constant_shape(out, base + "/A_flat_shape", flat)}, {a_2}, exact_reshape()));
    const int y2 = new_value(out, base + "/Y_flat", dtype_of(g, prod.outputs[0]), Shape{flat[0], *n});
    moved.inputs[0] = a_2;
    moved.outputs[0] = y2;
    nodes.push_back(std::move(moved));
    nodes.push_back(new_node("", "Reshape", base + "/Reshape_Y",
                             {y2, constant_shape(out, base + "/Y_shape", *result)}, {tr.outputs[0]}, exact_reshape()));
  } else {
    moved.inputs[0] = a_t;
    moved.outputs[0] = tr.outputs[0];
    nodes.push_back(std::move(moved));
  }
  plan.drop[p] = true;
  plan.orphaned.push_back(prod.outputs[0]);
  for (size_t r : chain) {
    plan.drop[r] = true;
    plan.orphaned.push_back(g.nodes[r].outputs[0]);
  }
  plan.drop[t] = true;
  return true;
}

bool strided_copy_native(Device device, DType dtype) {
  const OpSchema* copy = find_op(opdef::kPortaDomain, "StridedCopy");
  return copy && resolve(*copy, device, dtype).path == Path::native;
}

}  // namespace

bool row_transpose_candidates(const Graph& g) {
  for (const Node& n : g.nodes)
    if (is_onnx_op(n, "Transpose", 1)) return true;
  return false;
}

std::shared_ptr<const Graph> move_row_transposes(const std::shared_ptr<const Graph>& graph, Device device,
                                                 bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = data_readers(g);
  std::vector<bool> is_output = graph_output_flags(g);
  std::shared_ptr<Graph> out;
  Plan plan{std::vector<bool>(g.nodes.size(), false), std::vector<std::vector<Node>>(g.nodes.size()), {}};
  std::vector<std::pair<DType, bool>> native;  // StridedCopy per dtype, asked once
  auto copies = [&](DType t) {
    for (const auto& [dt, yes] : native)
      if (dt == t) return yes;
    native.emplace_back(t, strided_copy_native(device, t));
    return native.back().second;
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (plan.drop[i]) continue;
    const Node& n = g.nodes[i];
    if (n.outputs.empty() || n.outputs[0] < 0 || !dtype_in(kFloats, dtype_of(g, n.outputs[0])) ||
        !copies(dtype_of(g, n.outputs[0])))
      continue;
    if (!out) out = std::make_shared<Graph>(g);
    if (is_onnx_op(n, "Transpose", 1)) move_forward(*out, g, i, consumers, is_output, plan);
    else if (n.op->domain.empty() && (n.op->name == "MatMul" || n.op->name == "Gemm"))
      move_backward(*out, g, i, consumers, is_output, plan);
  }
  if (!out || plan.orphaned.empty()) return graph;
  fold_orphaned_shapes(*out, g, plan.orphaned, plan.drop);
  splice_nodes(*out, plan.before, plan.drop);
  return out;
}

}  // namespace porta::detail
