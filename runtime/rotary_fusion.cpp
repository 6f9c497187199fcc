// Rotary position embeddings written out (runtime/graph_fusion.hpp, fuse_rotary): LLaMA-style
// code rotates the halves of q and k as
//   y = x * cos + rotate_half(x) * sin,   rotate_half(x) = Concat(-x[..., D/2:], x[..., :D/2])
// with cos and sin tables [S, D] whose two halves are equal (cat([angles, angles])): seven
// nodes, four of them passes over x. That is RotaryEmbedding (ai.porta, interleaved 0) with
// tables of the first halves, one pass.
#include <optional>
#include <string>
#include <vector>

#include "porta/dispatch.hpp"
#include "porta/util.hpp"
#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

// The integers of a constant or plan-folded value (i64 or i32, on the host).
std::optional<std::vector<int64_t>> ints_of(const Graph& g, int v) {
  if (v < 0) return std::nullopt;
  const Tensor* t = constant_tensor(g, v);
  if (!t && g.values[v].folded.defined()) t = &g.values[v].folded;
  if (!t || t->device().type != DeviceType::cpu || (t->dtype() != DType::i64 && t->dtype() != DType::i32)) return std::nullopt;
  const Tensor c = t->contiguous();
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c.numel(); ++i)  // exactly: Slice's "to the end" is INT64_MAX
    out.push_back(c.dtype() == DType::i64 ? c.data<int64_t>()[i] : c.data<int32_t>()[i]);
  return out;
}

// A Slice of one axis, step 1, with constant bounds.
struct OneAxisSlice {
  int data = -1;
  int64_t start = 0, end = 0, axis = 0;
};
std::optional<OneAxisSlice> one_axis_slice(const Graph& g, const Node& n) {
  if (!is_onnx_op(n, "Slice") || n.inputs.size() < 3 || n.inputs[0] < 0) return std::nullopt;
  auto starts = ints_of(g, n.inputs[1]), ends = ints_of(g, n.inputs[2]);
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{0};
  if (n.inputs.size() > 3 && n.inputs[3] >= 0) axes = ints_of(g, n.inputs[3]);
  if (n.inputs.size() > 4 && n.inputs[4] >= 0) {
    auto steps = ints_of(g, n.inputs[4]);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
  }
  if (!starts || !ends || !axes || starts->size() != 1 || ends->size() != 1 || axes->size() != 1) return std::nullopt;
  return OneAxisSlice{n.inputs[0], (*starts)[0], (*ends)[0], (*axes)[0]};
}

// Where a table comes from: a constant [S, D] itself, or rows of a constant [P, D] (a Slice of
// its axis 0 from row 0: cos[:n]).
struct Table {
  const Tensor* source = nullptr;
  int slice = -1;  // the Slice node, or -1
};

struct RotaryMatch {
  int x = -1;
  int64_t S = 0, D = 0;
  Table cos, sin;
  std::vector<int> nodes;  // the pattern's nodes; the last (the Add) becomes the RotaryEmbedding
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), r_(g) {}

  std::optional<RotaryMatch> match(int add) const {
    const Node& a = g_.nodes[add];
    if (!is_onnx_op(a, "Add") || a.inputs.size() != 2) return std::nullopt;
    for (int first = 0; first < 2; ++first) {
      const int m1 = producer_for(a.inputs[first], add, "Mul"), m2 = producer_for(a.inputs[1 - first], add, "Mul");
      if (m1 < 0 || m2 < 0) continue;
      for (int r_side = 0; r_side < 2; ++r_side) {
        const Node& n2 = g_.nodes[m2];
        const int concat = producer_for(n2.inputs[r_side], m2, "Concat");
        if (concat < 0) continue;
        std::optional<RotaryMatch> m = rotated(concat);
        if (!m) continue;
        // x * cos, either order.
        const Node& n1 = g_.nodes[m1];
        if (n1.inputs.size() != 2 || (n1.inputs[0] != m->x && n1.inputs[1] != m->x)) continue;
        const int cos = n1.inputs[0] == m->x ? n1.inputs[1] : n1.inputs[0];
        const int sin = n2.inputs[1 - r_side];
        std::optional<Table> c = table(cos, *m), s = table(sin, *m);
        if (!c || !s) continue;
        m->cos = *c;
        m->sin = *s;
        m->nodes.push_back(concat);
        m->nodes.push_back(m1);
        m->nodes.push_back(m2);
        m->nodes.push_back(add);
        return m;
      }
    }
    return std::nullopt;
  }

 private:
  // Concat(Neg(x[..., D/2:]), x[..., :D/2]) over the last axis of x [B, H, S, D].
  std::optional<RotaryMatch> rotated(int concat) const {
    const Node& c = g_.nodes[concat];
    if (c.inputs.size() != 2) return std::nullopt;
    const int neg = producer_for(c.inputs[0], concat, "Neg");
    if (neg < 0) return std::nullopt;
    const int s2 = producer_for(g_.nodes[neg].inputs[0], neg, "Slice"), s1 = producer_for(c.inputs[1], concat, "Slice");
    if (s1 < 0 || s2 < 0) return std::nullopt;
    std::optional<OneAxisSlice> lo = one_axis_slice(g_, g_.nodes[s1]), hi = one_axis_slice(g_, g_.nodes[s2]);
    if (!lo || !hi || lo->data != hi->data) return std::nullopt;
    const Value& x = g_.values[lo->data];
    if (!x.shape_known || x.shape.size() != 4 || (x.dtype != DType::f32 && x.dtype != DType::f16)) return std::nullopt;
    const int64_t D = x.shape[3], half = D / 2;
    auto last = [&](int64_t axis) { return axis == -1 || axis == 3; };
    const int64_t axis = c.attrs.get_int("axis", 0);
    if (D <= 0 || D % 2 != 0 || (axis != -1 && axis != 3)) return std::nullopt;
    if (!last(lo->axis) || lo->start != 0 || lo->end != half) return std::nullopt;
    if (!last(hi->axis) || hi->start != half || hi->end < D) return std::nullopt;
    RotaryMatch m;
    m.x = lo->data;
    m.S = x.shape[2];
    m.D = D;
    m.nodes = {s1, s2, neg};
    return m;
  }

  // A table [S, D] whose halves are equal: a constant, or rows 0.. of a constant [P, D].
  std::optional<Table> table(int v, const RotaryMatch& m) const {
    const Value& val = g_.values[v];
    if (!val.shape_known || val.shape != Shape{m.S, m.D} || val.dtype != g_.values[m.x].dtype) return std::nullopt;
    Table t;
    t.source = constant_tensor(g_, through_identities(g_, v));
    if (!t.source) {
      const int p = val.producer;
      std::optional<OneAxisSlice> rows = p >= 0 ? one_axis_slice(g_, g_.nodes[p]) : std::nullopt;
      if (!rows || rows->start != 0 || (rows->axis != 0 && rows->axis != -2)) return std::nullopt;
      t.source = constant_tensor(g_, through_identities(g_, rows->data));
      t.slice = p;
    }
    if (!t.source || t.source->rank() != 2 || t.source->dim(1) != m.D || t.source->dtype() != val.dtype)
      return std::nullopt;
    const std::vector<double> d = t.source->to_doubles();
    const int64_t half = m.D / 2;
    for (int64_t p = 0; p < t.source->dim(0); ++p)
      for (int64_t j = 0; j < half; ++j)
        if (d[static_cast<size_t>(p * m.D + j)] != d[static_cast<size_t>(p * m.D + half + j)]) return std::nullopt;
    return t;
  }

  // The node producing v when it is `op` and v is read by `reader` alone and is no graph output.
  int producer_for(int v, int reader, const char* op) const {
    if (v < 0 || r_.only_reader(v) != reader) return -1;
    const int p = g_.values[v].producer;
    return p >= 0 && is_onnx_op(g_.nodes[p], op) ? p : -1;
  }

  const Graph& g_;
  ValueReaders r_;
};

// The first halves of a table's rows, as a constant [P, D/2].
Tensor first_halves(const Tensor& t) {
  const int64_t rows = t.dim(0), d = t.dim(1), half = d / 2;
  const std::vector<double> v = t.to_doubles();
  std::vector<double> out;
  out.reserve(static_cast<size_t>(rows * half));
  for (int64_t p = 0; p < rows; ++p)
    for (int64_t j = 0; j < half; ++j) out.push_back(v[static_cast<size_t>(p * d + j)]);
  return Tensor::from_values(out, {rows, half}, t.dtype());
}

}  // namespace

bool rotary_candidates(const Graph& graph) {
  for (const Node& n : graph.nodes)
    if (is_onnx_op(n, "Concat") && n.inputs.size() == 2 && n.inputs[0] >= 0) {
      const int p = graph.values[n.inputs[0]].producer;
      if (p >= 0 && is_onnx_op(graph.nodes[p], "Neg")) return true;
    }
  return false;
}

std::shared_ptr<const Graph> fuse_rotary(const std::shared_ptr<const Graph>& graph, Device device, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const OpSchema* rope = find_op("ai.porta", "RotaryEmbedding");
  if (!rope) return graph;
  const Graph& g = *graph;
  Matcher matcher(g);
  std::vector<RotaryMatch> matches;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::optional<RotaryMatch> m = matcher.match(static_cast<int>(i));
    // Only where the device runs RotaryEmbedding itself: elsewhere it would decompose back.
    if (m && resolve(*rope, device, g.values[m->x].dtype).path == Path::native) matches.push_back(std::move(*m));
  }
  if (matches.empty()) return graph;
  auto out = std::make_shared<Graph>(g);
  std::vector<bool> drop(out->nodes.size(), false);
  std::vector<std::vector<Node>> before(out->nodes.size());  // new nodes, inserted before node i
  for (const RotaryMatch& m : matches) {
    const int add = m.nodes.back();
    std::vector<int> tables;
    for (const Table* t : {&m.cos, &m.sin}) {
      const std::string name = str(g.nodes[add].name, t == &m.cos ? "/porta_rotary_cos" : "/porta_rotary_sin");
      const int half = out->add_value(name + (t->slice >= 0 ? "_table" : ""));
      out->values[half].constant = first_halves(*t->source);
      out->values[half].dtype = t->source->dtype();
      out->values[half].shape = out->values[half].constant.shape();
      out->values[half].shape_known = true;
      if (t->slice < 0) {
        tables.push_back(half);
        continue;
      }
      // The same rows of the half table: a Slice with the original's bounds, folded by the plan.
      Node slice = g.nodes[t->slice];
      slice.name = name;
      slice.inputs[0] = half;
      const int rows = out->add_value(name);
      out->values[rows].dtype = t->source->dtype();
      out->values[rows].shape = {m.S, m.D / 2};
      out->values[rows].shape_known = true;
      slice.outputs = {rows};
      before[add].push_back(std::move(slice));
      tables.push_back(rows);
    }
    for (size_t k = 0; k + 1 < m.nodes.size(); ++k) drop[m.nodes[k]] = true;
    Node& last = out->nodes[add];
    last.op = rope;
    last.inputs = {m.x, tables[0], tables[1]};
    last.attrs = complete_attributes(*rope, Attributes{}, last.name);
  }
  std::vector<Node> nodes;
  std::vector<bool> dropped;
  for (size_t i = 0; i < out->nodes.size(); ++i) {
    for (Node& n : before[i]) {
      nodes.push_back(std::move(n));
      dropped.push_back(false);
    }
    nodes.push_back(std::move(out->nodes[i]));
    dropped.push_back(drop[i]);
  }
  out->nodes = std::move(nodes);
  drop_nodes(*out, dropped);
  return out;
}

}  // namespace porta::detail
