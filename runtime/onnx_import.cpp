// porta runtime — ONNX import: ModelProto -> Graph, treating the file as untrusted input.
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "porta/dispatch.hpp"
#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/graph.hpp"
#include "runtime/onnx_source.hpp"
#include "runtime/onnx_tensor.hpp"
#include "runtime/session_plan.hpp"

namespace fs = std::filesystem;

namespace porta {
namespace {

constexpr int kMinOpset = 13, kMaxOpset = 17;
constexpr uint64_t kMaxModelBytes = 1ull << 31;  // protobuf's own limit is 2 GiB

// A model of an opset below 13 imports when each of its ai.onnx ops has the same definition at
// the model's opset as at opset 13: ONNX's schema registry gives the definition active at an
// opset (the one with the largest since_version not above it), and porta implements the ones
// of opsets 13 to 17. Every op whose definition changed in between is named, with both versions.
void check_older_opset(const onnx::GraphProto& gp, int opset) {
  std::set<std::string> seen;
  std::string changed;
  int count = 0;
  for (const auto& n : gp.node()) {
    if (!(n.domain().empty() || n.domain() == "ai.onnx") || !seen.insert(n.op_type()).second) continue;
    const onnx::OpSchema* then = onnx::OpSchemaRegistry::Schema(n.op_type(), opset, "");
    const onnx::OpSchema* now = onnx::OpSchemaRegistry::Schema(n.op_type(), kMinOpset, "");
    if (then && now && then->since_version() == now->since_version()) continue;
    ++count;
    changed += str("\n  ", n.op_type(), ": ",
                   then ? str("opset ", opset, " uses its version ", then->since_version())
                        : str("not defined at opset ", opset),
                   now ? str(", porta implements version ", now->since_version()) : str(", removed by opset ", kMinOpset));
  }
  if (count)
    throw Unsupported(str("[onnx] the model uses ONNX opset ", opset, "; porta supports opsets ", kMinOpset, " to ",
                          kMaxOpset, " and older ones only for ops defined the same way as in opset ", kMinOpset,
                          ", but ", count, " op(s) of this model changed since opset ", opset, ":", changed,
                          "\n(re-export with torch.onnx.export(..., opset_version=17))"));
}

AttrValue convert_attribute(const onnx::AttributeProto& a, const std::string& base_dir,
                            const std::string& context) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return static_cast<double>(a.f());
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto::TENSOR:
      return detail::tensor_from_proto(a.t(), base_dir, str(context, " attribute '", a.name(), "'"));
    default: break;
  }
  throw Unsupported(str("[onnx] ", context, ": attribute '", a.name(), "' has type ",
                        onnx::AttributeProto::AttributeType_Name(a.type()), ", which porta does not support"));
}

ValueDesc describe_value(const onnx::ValueInfoProto& v, const std::string& what) {
  ValueDesc d;
  d.name = v.name();
  if (!v.has_type() || !v.type().has_tensor_type())
    throw Unsupported(str("[onnx] ", what, " '", v.name(), "' is not a tensor (sequences and maps are not supported)"));
  auto& tt = v.type().tensor_type();
  d.dtype = detail::dtype_from_onnx(tt.elem_type(), str(what, " '", v.name(), "'"));
  if (tt.has_shape()) {
    for (auto& dim : tt.shape().dim()) {
      if (dim.has_dim_value()) {
        if (dim.dim_value() < 0)
          throw InvalidModel(str("[onnx] ", what, " '", v.name(), "' has a negative dimension"));
        d.shape.push_back(dim.dim_value());
        d.dim_names.push_back("");
      } else {
        d.shape.push_back(-1);
        d.dim_names.push_back(dim.dim_param());
      }
    }
  } else {
    d.rank_known = false;
  }
  return d;
}

// `raw` holds, per initializer, its raw_data when the parse left it in the source.
std::shared_ptr<Graph> build_graph(const onnx::ModelProto& m, const std::string& base_dir,
                                   const std::vector<std::optional<detail::RawData>>& raw) {
  auto g = std::make_shared<Graph>();
  int opset = -1;
  std::map<std::string, int64_t> other_domains;  // custom domain -> the version the model imports
  for (auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
    else other_domains[o.domain()] = o.version();
  }
  if (opset < 0) opset = kMaxOpset;  // ONNX says the default domain is implied
  if (opset < 1 || opset > kMaxOpset)
    throw Unsupported(str("[onnx] the model uses ONNX opset ", opset, "; porta supports opsets ",
                          kMinOpset, " to ", kMaxOpset, " (re-export with torch.onnx.export(..., opset_version=17))"));
  const onnx::GraphProto& gp = m.graph();
  if (opset < kMinOpset) check_older_opset(gp, opset);
  g->opset = std::max(opset, kMinOpset);  // an accepted older model means what opset 13 says

  // Initializers (weights).
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const onnx::TensorProto& init = gp.initializer(i);
    if (init.name().empty()) throw InvalidModel("[onnx] an initializer has no name");
    if (g->find(init.name()) >= 0)
      throw InvalidModel(str("[onnx] initializer '", init.name(), "' is defined twice"));
    int id = g->add_value(init.name());
    Value& v = g->values[id];
    const std::optional<detail::RawData>& bytes = raw.at(static_cast<size_t>(i));
    v.constant = detail::tensor_from_proto(init, base_dir, str("initializer '", init.name(), "'"),
                                           bytes ? &*bytes : nullptr);
    v.dtype = v.constant.dtype();
    v.shape = v.constant.shape();
    v.shape_known = true;
  }
  // Graph inputs (those that are not initializers).
  for (auto& in : gp.input()) {
    int existing = g->find(in.name());
    if (existing >= 0) {
      if (g->values[existing].constant.defined()) continue;  // initializer listed as input
      throw InvalidModel(str("[onnx] graph input '", in.name(), "' is declared twice"));
    }
    ValueDesc d = describe_value(in, "graph input");
    int id = g->add_value(in.name());
    g->values[id].dtype = d.dtype;
    g->values[id].shape = d.shape;
    g->inputs.push_back(id);
    g->input_descs.push_back(std::move(d));
  }
  // Nodes: check every op exists before anything else, and report all unknown ones at once.
  std::string unknown;
  int unknown_count = 0;
  for (int i = 0; i < gp.node_size(); ++i) {
    auto& n = gp.node(i);
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    if (!find_op(domain, n.op_type())) {
      ++unknown_count;
      if (unknown_count <= 20)
        unknown += str("\n  ", domain.empty() ? "" : domain + "::", n.op_type(), " (node '",
                       n.name().empty() ? str("#", i) : n.name(), "', opset ",
                       domain.empty() ? std::to_string(opset) : "custom", ")");
    }
  }
  if (unknown_count)
    throw Unsupported(str("[onnx] ", unknown_count, " node(s) use ops porta does not implement:", unknown,
                          unknown_count > 20 ? "\n  ..." : "",
                          "\nA plugin can provide them: list its shared library (or its folder) in PORTA_PLUGIN_PATH (entries separated "
                          "by ':'); examples/README.md shows how to write one (schema, reference, kernels)."));
  for (int i = 0; i < gp.node_size(); ++i) {
    auto& n = gp.node(i);
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    Node node;
    node.name = n.name().empty() ? str(n.op_type(), "_", i) : n.name();
    node.op = find_op(domain, n.op_type());
    std::string context = str("node '", node.name, "'");
    if (auto v = other_domains.find(domain); v != other_domains.end()) {
      const OpSchema& op = *node.op;
      if (v->second < op.since_version || (op.until_version && v->second > op.until_version))
        throw Unsupported(str("[", op.qualified_name(), "] ", context, ": the model imports domain ", domain, " version ",
                              v->second, "; porta's ", op.name, " is defined for versions ", op.since_version,
                              op.until_version ? str(" to ", op.until_version) : std::string(" and later")));
    }
    Attributes given;
    for (auto& a : n.attribute()) given.set(a.name(), convert_attribute(a, base_dir, context));
    node.attrs = complete_attributes(*node.op, given, context + ": ");
    for (auto& name : n.input()) {
      if (name.empty()) {
        node.inputs.push_back(-1);
        continue;
      }
      int id = g->find(name);
      if (id < 0) id = g->add_value(name);  // produced later (or by nothing: checked below)
      node.inputs.push_back(id);
    }
    while (!node.inputs.empty() && node.inputs.back() < 0) node.inputs.pop_back();
    int n_in = static_cast<int>(node.inputs.size());
    if (n_in < node.op->min_inputs() || (node.op->max_inputs() >= 0 && n_in > node.op->max_inputs()))
      throw InvalidModel(str("[", node.op->name, "] ", context, ": expected ", node.op->min_inputs(),
                             node.op->max_inputs() < 0 ? " or more" : str(" to ", node.op->max_inputs()),
                             " inputs, got ", n_in));
    for (auto& name : n.output()) {
      if (name.empty()) {
        node.outputs.push_back(-1);
        continue;
      }
      int id = g->find(name);
      if (id >= 0 && (g->values[id].constant.defined() || g->values[id].producer >= 0 ||
                      std::find(g->inputs.begin(), g->inputs.end(), id) != g->inputs.end()))
        throw InvalidModel(str("[onnx] ", context, ": output '", name, "' is already produced elsewhere"));
      if (id < 0) id = g->add_value(name);
      g->values[id].producer = i;  // provisional; topological_sort recomputes
      node.outputs.push_back(id);
    }
    if (node.outputs.empty()) throw InvalidModel(str("[onnx] ", context, " has no outputs"));
    g->nodes.push_back(std::move(node));
  }
  // Every consumed value must come from somewhere.
  std::vector<bool> is_input(g->values.size(), false);
  for (int id : g->inputs) is_input[id] = true;
  for (auto& node : g->nodes)
    for (int v : node.inputs)
      if (v >= 0 && !is_input[v] && !g->values[v].constant.defined() && g->values[v].producer < 0)
        throw InvalidModel(str("[onnx] node '", node.name, "' reads '", g->values[v].name,
                               "', which no node, initializer or graph input produces"));
  for (auto& out : gp.output()) {
    int id = g->find(out.name());
    if (id < 0)
      throw InvalidModel(str("[onnx] graph output '", out.name(), "' is produced by nothing"));
    g->outputs.push_back(id);
    ValueDesc d;
    try {
      d = describe_value(out, "graph output");
    } catch (const Error&) {
      d.name = out.name();
      d.rank_known = false;
    }
    g->output_descs.push_back(std::move(d));
  }
  if (g->outputs.empty()) throw InvalidModel("[onnx] the graph has no outputs");
  topological_sort(*g);
  return g;
}

// With static input shapes, shapes and dtypes of every value are inferred now, so a model
// whose shapes do not fit together fails at load, and output descriptions are complete.
// Models with dynamic dimensions (or inputs that decide shapes) are inferred per input
// shapes when they first run.
void infer_at_load(Graph& g) {
  std::vector<bool> value_inputs = detail::shape_deciding_inputs(g);
  std::vector<Shape> shapes;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Shape& s = g.values[g.inputs[k]].shape;
    if (value_inputs[k] || !g.input_descs[k].rank_known) return;
    for (int64_t d : s)
      if (d < 0) return;
    shapes.push_back(s);
  }
  SessionOptions cpu;
  std::unique_ptr<detail::Plan> plan = detail::compile_plan(g, cpu, shapes, {});
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const detail::Slot& slot = plan->slots[plan->output_slots[i]];
    ValueDesc& d = g.output_descs[i];
    d.dtype = slot.dtype;
    d.shape = slot.shape;
    d.dim_names.assign(slot.shape.size(), "");
    d.rank_known = true;
  }
}

// Parses a ModelProto from `source` and imports it. The initializers' raw_data is left out of
// the parse (onnx_source.hpp) and read once, into the tensors that keep it.
Model import_model(const detail::ByteSource& source, const std::string& base_dir) {
  if (source.size() == 0) throw InvalidModel("[onnx] empty model data");
  if (source.size() > kMaxModelBytes)
    throw InvalidModel(str("[onnx] model of ", source.size(), " bytes exceeds the 2 GiB protobuf limit; use external data"));
  std::optional<detail::StrippedMessage> stripped = detail::strip_model_raw_data(source);
  // Bytes the scan did not follow (groups, malformed data) go to protobuf whole: it judges them.
  std::unique_ptr<char[]> whole;
  const void* data = source.memory();
  size_t size = static_cast<size_t>(source.size());
  if (stripped) {
    data = stripped->bytes.data();
    size = stripped->bytes.size();
  } else if (!data) {
    whole.reset(new char[size]);
    source.read(0, whole.get(), size);
    data = whole.get();
  }
  onnx::ModelProto proto;
  google::protobuf::io::CodedInputStream stream(static_cast<const uint8_t*>(data), static_cast<int>(size));
  stream.SetTotalBytesLimit(static_cast<int>(std::min<uint64_t>(source.size(), kMaxModelBytes - 1)));
  stream.SetRecursionLimit(64);
  if (!proto.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage())
    throw InvalidModel(str("[onnx] not a valid ONNX model (", source.size(),
                           " bytes that do not parse as a ModelProto: truncated or not ONNX)"));
  whole.reset();
  if (stripped) std::string().swap(stripped->bytes);
  if (!proto.has_graph() || proto.graph().node_size() == 0)
    throw InvalidModel("[onnx] the model has no graph nodes (not an ONNX model, or an empty one)");
  // Where each initializer's raw_data lies in the source (none where the proto holds it).
  std::vector<std::optional<detail::RawData>> raw(static_cast<size_t>(proto.graph().initializer_size()));
  if (stripped) {
    if (stripped->raw.size() != raw.size())
      throw InvalidModel(str("[onnx] internal: the scan found ", stripped->raw.size(), " initializers, protobuf ",
                             raw.size()));
    raw = std::move(stripped->raw);
  }
  std::shared_ptr<Graph> graph = build_graph(proto, base_dir, raw);
  infer_at_load(*graph);
  return Model(graph);
}

}  // namespace

Model Model::from_bytes(const void* data, size_t size, const std::string& base_dir) {
  if (!data || size == 0) throw InvalidModel("[onnx] empty model data");
  return import_model(detail::ByteSource(data, size), base_dir);
}

Model Model::load(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw InvalidModel(str("[onnx] model file '", path, "' does not exist"));
  if (fs::is_directory(path, ec)) throw InvalidModel(str("[onnx] '", path, "' is a folder, expected an .onnx file"));
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  try {
    detail::ByteSource source(path);
    if (source.size() > kMaxModelBytes)
      throw InvalidModel(str("[onnx] '", path, "' is ", source.size(), " bytes; protobuf models are limited to 2 GiB"));
    return import_model(source, dir);
  } catch (const InvalidModel& e) {
    throw InvalidModel(str(e.what(), " (file '", path, "')"));
  }
}

Model::Model(std::shared_ptr<const Graph> graph) : graph_(std::move(graph)) {}
const std::vector<ValueDesc>& Model::inputs() const { return graph_->input_descs; }
const std::vector<ValueDesc>& Model::outputs() const { return graph_->output_descs; }

}  // namespace porta
