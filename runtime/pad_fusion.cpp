// porta runtime — folding zero Pads into the Conv or AveragePool that reads them (contract in
// graph_fusion.hpp). A Pad is a full copy of its input into a larger buffer, and as a cpu step
// it reads and writes plain tensors, so the channels-last layout of the values around it
// (runtime/plan_layouts.cpp) breaks there too; the reader's own padding costs neither.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "runtime/graph_fusion.hpp"

namespace porta::detail {
namespace {

// The integers of a constant 1-D i64/i32 value (an initializer, or a Constant node's value or
// value_ints), if `v` is one.
std::optional<std::vector<int64_t>> constant_ints(const Graph& g, int v) {
  if (const Node* n = constant_node(g, v); n && n->attrs.has("value_ints")) return n->attrs.get_ints("value_ints");
  const Tensor* t = constant_tensor(g, v);
  if (!t || t->rank() != 1 || (t->dtype() != DType::i64 && t->dtype() != DType::i32)) return std::nullopt;
  std::vector<int64_t> out;
  for (double d : t->to_doubles()) out.push_back(static_cast<int64_t>(d));
  return out;
}

// A Pad node's pads when they are constant, or nullopt. Only the ONNX domain's Pad, opset 13's
// form (pads as an input; older models with the attribute form are refused at import), without
// opset 18's axes.
std::optional<std::vector<int64_t>> pad_amounts(const Graph& g, const Node& pad) {
  if (pad.op->name != "Pad" || !pad.op->domain.empty() || pad.outputs.size() != 1 || pad.outputs[0] < 0)
    return std::nullopt;
  if (pad.inputs.size() < 2 || pad.inputs[0] < 0 || (pad.inputs.size() > 3 && pad.inputs[3] >= 0)) return std::nullopt;
  return constant_ints(g, pad.inputs[1]);
}

// Whether the Pad adds only +0.0 before and after spatial axes: constant mode, value absent or
// a constant +0.0, pads non-negative and zero on N and C, for rank 3 to 5. The rank is pads'
// length / 2 (graph values carry no shapes before a plan is compiled): were the data's rank
// another, the Pad would fail, and so does the reader it folds into, whose pads then have the
// wrong length for its input.
bool spatial_zero_pad(const Graph& g, const Node& pad, const std::vector<int64_t>& pads) {
  if (pad.attrs.get_string("mode", "constant") != "constant") return false;
  if (pad.inputs.size() > 2 && pad.inputs[2] >= 0) {
    std::optional<double> value = constant_scalar(g, pad.inputs[2]);
    if (!value || *value != 0.0 || std::signbit(*value)) return false;  // -0.0 would change signed zeros
  }
  const size_t rank = pads.size() / 2;
  if (pads.size() != 2 * rank || rank < 3 || rank > 5) return false;
  for (int64_t p : pads)
    if (p < 0) return false;
  return pads[0] == 0 && pads[1] == 0 && pads[rank] == 0 && pads[rank + 1] == 0;
}

// The reader's pads attribute (begins then ends per spatial axis) plus the Pad's spatial pads,
// or nullopt when the attribute's length is wrong (inference reports it).
std::optional<std::vector<int64_t>> added_pads(const Node& reader, const std::vector<int64_t>& pads) {
  const size_t rank = pads.size() / 2, spatial = rank - 2;
  std::vector<int64_t> own = reader.attrs.get_ints("pads", std::vector<int64_t>(2 * spatial, 0));
  if (own.size() != 2 * spatial) return std::nullopt;
  for (size_t i = 0; i < spatial; ++i) {
    own[i] += pads[i + 2];
    own[spatial + i] += pads[rank + i + 2];
  }
  return own;
}

// The attributes `reader` takes the Pad's padding with, or nullopt when folding would change
// its result.
std::optional<Attributes> folded_reader_attrs(const Node& reader, const std::vector<int64_t>& pads) {
  if (!reader.op->domain.empty() || reader.attrs.get_string("auto_pad", "NOTSET") != "NOTSET") return std::nullopt;
  std::optional<std::vector<int64_t>> sum = added_pads(reader, pads);
  if (!sum) return std::nullopt;
  Attributes a = reader.attrs;
  if (reader.op->name == "Conv") {  // zeros in the data or zeros of the padding: the same taps
    a.set("pads", *sum);
    return a;
  }
  if (reader.op->name != "AveragePool" || reader.attrs.get_int("ceil_mode", 0) != 0) return std::nullopt;
  // Without ceil_mode every window lies inside the data plus the pool's pads. With
  // count_include_pad = 1 the divisor is the kernel size before and after. With 0 it counts the
  // taps inside the padded data: all of them only when the pool has no pads of its own.
  if (reader.attrs.get_int("count_include_pad", 0) == 0) {
    for (int64_t p : reader.attrs.get_ints("pads", {}))
      if (p != 0) return std::nullopt;
    a.set("count_include_pad", int64_t{1});
  }
  a.set("pads", *sum);
  return a;
}

}  // namespace

std::shared_ptr<const Graph> fold_pads(const std::shared_ptr<const Graph>& graph, bool enabled) {
  if (!graph || !enabled || !fusion_enabled()) return graph;
  const Graph& g = *graph;
  std::vector<int> consumers = consumer_counts(g);
  std::vector<bool> is_output = graph_output_flags(g);
  std::shared_ptr<Graph> out;
  std::vector<bool> drop;
  std::vector<int> read_by_dropped;  // the folded Pads' pads and values (Constant nodes)
  std::vector<int> same_as(g.values.size(), -1);  // an identity Pad's output: its data
  auto fold = [&](size_t pad_index) {
    if (!out) {
      out = std::make_shared<Graph>(g);
      drop.assign(g.nodes.size(), false);
    }
    drop[pad_index] = true;
    const std::vector<int>& inputs = g.nodes[pad_index].inputs;
    read_by_dropped.insert(read_by_dropped.end(), inputs.begin() + 1, inputs.end());
  };
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& pad = g.nodes[i];
    std::optional<std::vector<int64_t>> pads = pad_amounts(g, pad);
    if (!pads) continue;
    const int x = pad.inputs[0], y = pad.outputs[0];
    if (is_output[y]) continue;
    bool identity = true;
    for (int64_t p : *pads) identity &= p == 0;
    if (identity) {  // every reader reads the data itself
      fold(i);
      same_as[y] = x;
      continue;
    }
    if (consumers[y] != 1 || !spatial_zero_pad(g, pad, *pads)) continue;
    for (size_t r = 0; r < g.nodes.size(); ++r) {
      const Node& reader = g.nodes[r];
      if (reader.inputs.empty() || reader.inputs[0] != y) continue;
      if (std::optional<Attributes> a = folded_reader_attrs(reader, *pads)) {
        fold(i);
        out->nodes[r].attrs = std::move(*a);
        out->nodes[r].inputs[0] = x;
      }
      break;
    }
  }
  if (!out) return graph;
  for (Node& n : out->nodes)  // through chains of identity Pads
    for (int& v : n.inputs)
      while (v >= 0 && same_as[v] >= 0) v = same_as[v];
  drop_unread_constants(*out, read_by_dropped, drop);
  drop_nodes(*out, drop);
  return out;
}

}  // namespace porta::detail
