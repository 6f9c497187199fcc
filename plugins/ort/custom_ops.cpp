// plugins/ort — the custom-op library: every op of porta's registry outside ONNX's own domains
// (porta's ai.porta ops and the ops of the plugins PORTA_PLUGIN_PATH names) as an ONNX Runtime
// custom op of its domain. A call runs porta's cpu kernel on ORT's tensors: inputs are wrapped,
// outputs are allocated by ORT with porta's inferred shapes and written in place. An op whose
// cpu path is a composite (no cpu kernel) runs through porta's eager call and its outputs are
// copied into ORT's.
#include <atomic>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ort_common.hpp"
#include "porta/backend.hpp"
#include "porta/dispatch.hpp"
#include "porta/op.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"

namespace porta_ort {
namespace {

using porta::OpSchema;

bool optional_name(const std::string& n) { return !n.empty() && n.back() == '?'; }
bool variadic_name(const std::string& n) { return n.size() >= 3 && n.compare(n.size() - 3, 3, "...") == 0; }

/// Reads the attributes `op` declares from a node, through `get` (an ORT lookup per type);
/// absent ones are left out so porta fills in defaults (and refuses missing required ones).
porta::Attributes read_attributes(const OpSchema& op, const OrtKernelInfo* info) {
  porta::Attributes out;
  Ort::ConstKernelInfo ki(info);
  for (const porta::AttrDef& def : op.attrs) {
    const char* name = def.name.c_str();
    try {
      switch (def.type) {
        case porta::AttrType::Int: out.set(def.name, ki.GetAttribute<int64_t>(name)); break;
        case porta::AttrType::Float:
          out.set(def.name, static_cast<double>(ki.GetAttribute<float>(name)));
          break;
        case porta::AttrType::String: out.set(def.name, ki.GetAttribute<std::string>(name)); break;
        case porta::AttrType::Ints: out.set(def.name, ki.GetAttributes<int64_t>(name)); break;
        case porta::AttrType::Floats: {
          std::vector<float> f = ki.GetAttributes<float>(name);
          out.set(def.name, std::vector<double>(f.begin(), f.end()));
          break;
        }
        case porta::AttrType::Strings: out.set(def.name, ki.GetAttributes<std::string>(name)); break;
        case porta::AttrType::TensorValue: {
          Ort::AllocatorWithDefaultOptions alloc;
          Ort::Value v = ki.GetTensorAttribute(name, alloc);
          auto ti = v.GetTensorTypeAndShapeInfo();
          porta::Tensor t = porta::Tensor::from_host(v.GetTensorRawData(), ti.GetShape(),
                                                     to_porta(ti.GetElementType()));
          out.set(def.name, t);
          break;
        }
      }
    } catch (const Ort::Exception&) {
      // Absent on the node (ORT reports a missing attribute as a failed lookup).
    }
  }
  return porta::complete_attributes(op, out, "");
}

/// One node's kernel: the op, its attributes, and the state porta's kernel keeps between calls.
struct NodeKernel {
  const OpSchema* op;
  porta::Attributes attrs;
  std::mutex mutex;  // a kernel's state is used by one call at a time
  std::shared_ptr<void> state;
};

void compute(NodeKernel& k, OrtKernelContext* raw) {
  Ort::KernelContext ctx(raw);
  const OpSchema& op = *k.op;
  size_t n_in = ctx.GetInputCount(), n_out = ctx.GetOutputCount();
  std::vector<porta::Tensor> inputs(n_in);
  std::vector<porta::ValueInfo> infos(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    Ort::ConstValue v = ctx.GetInput(i);
    if (!v) {
      infos[i].present = false;
      continue;
    }
    auto ti = v.GetTensorTypeAndShapeInfo();
    porta::DType dt = to_porta(ti.GetElementType());
    inputs[i] = porta::Tensor::wrap_host(const_cast<void*>(v.GetTensorRawData()), ti.GetShape(), dt);
    infos[i].shape = inputs[i].shape();
    infos[i].dtype = dt;
    infos[i].value = &inputs[i];  // on the host already: shape-deciding inputs read directly
  }
  std::vector<porta::ValueInfo> out_infos =
      porta::detail::infer_outputs(op, k.attrs, infos, static_cast<int>(n_out), "");
  porta::DType dtype = porta::detail::dispatch_dtype(op, infos, out_infos);

  porta::KernelContext call;
  call.op = &op;
  call.attrs = &k.attrs;
  call.device = porta::Device::cpu();
  call.backend = &porta::backend_for(call.device);
  call.inputs = inputs;
  porta::Resolution r = porta::resolve_call(call, dtype);

  std::vector<void*> out_data(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    Ort::UnownedValue o = ctx.GetOutput(i, out_infos[i].shape);
    out_data[i] = o.GetTensorMutableRawData();
    call.outputs.push_back(porta::Tensor::wrap_host(out_data[i], out_infos[i].shape, out_infos[i].dtype));
  }
  if (r.path == porta::Path::native) {
    std::lock_guard lock(k.mutex);
    call.state = k.state;
    r.kernel->fn(call);
    k.state = call.state;
    return;
  }
  // No cpu kernel: porta's eager call (its composite) computes, and the results are copied.
  std::vector<porta::Tensor> outs =
      porta::call_op(op.qualified_name(), inputs, k.attrs, static_cast<int>(n_out));
  for (size_t i = 0; i < n_out && i < outs.size(); ++i) {
    if (!outs[i].defined()) continue;
    porta::Tensor host = outs[i].to(porta::Device::cpu()).contiguous();
    std::memcpy(out_data[i], host.raw_data(), host.nbytes());
  }
}

std::atomic<uint64_t> next_dim_name{0};

/// Output types and shapes for ORT's graph inference, from porta's own inference.
void infer_shapes(const OpSchema& op, OrtShapeInferContext* sctx) {
  const OrtApi& a = api();
  size_t n_in = 0;
  check(a.ShapeInferContext_GetInputCount(sctx, &n_in));
  porta::Attributes given;
  for (const porta::AttrDef& def : op.attrs) {
    const OrtOpAttr* attr = nullptr;
    if (a.ShapeInferContext_GetAttribute(sctx, def.name.c_str(), &attr) != nullptr || !attr) continue;
    size_t len = 0;
    auto read = [&](OrtOpAttrType t, void* data, size_t bytes) {
      OrtStatus* s = a.ReadOpAttr(attr, t, data, bytes, &len);
      if (s) a.ReleaseStatus(s);
      return s == nullptr;
    };
    switch (def.type) {
      case porta::AttrType::Int: {
        int64_t v = 0;
        if (read(ORT_OP_ATTR_INT, &v, sizeof v)) given.set(def.name, v);
        break;
      }
      case porta::AttrType::Float: {
        float v = 0;
        if (read(ORT_OP_ATTR_FLOAT, &v, sizeof v)) given.set(def.name, static_cast<double>(v));
        break;
      }
      case porta::AttrType::String: {
        read(ORT_OP_ATTR_STRING, nullptr, 0);
        std::string v(len, '\0');
        if (read(ORT_OP_ATTR_STRING, v.data(), v.size())) {
          if (!v.empty() && v.back() == '\0') v.pop_back();  // the count includes the terminator
          given.set(def.name, v);
        }
        break;
      }
      case porta::AttrType::Ints: {
        read(ORT_OP_ATTR_INTS, nullptr, 0);
        std::vector<int64_t> v(len / sizeof(int64_t));
        if (read(ORT_OP_ATTR_INTS, v.data(), v.size() * sizeof(int64_t))) given.set(def.name, v);
        break;
      }
      case porta::AttrType::Floats: {
        read(ORT_OP_ATTR_FLOATS, nullptr, 0);
        std::vector<float> v(len / sizeof(float));
        if (read(ORT_OP_ATTR_FLOATS, v.data(), v.size() * sizeof(float)))
          given.set(def.name, std::vector<double>(v.begin(), v.end()));
        break;
      }
      default: break;  // strings lists and tensors do not decide output types of porta's ops
    }
  }
  porta::Attributes attrs = porta::complete_attributes(op, given, "");

  // Unknown input dimensions are probed twice with distinct values per dimension: an output
  // dimension equal in both runs is known; one equal to an input dimension's probes is that
  // dimension (and takes its symbolic name); any other is unknown.
  struct Unknown {
    int64_t probe[2];
    std::string name;
  };
  std::vector<Unknown> unknown;
  std::vector<porta::ValueInfo> infos[2];
  infos[0].resize(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    porta::ValueInfo& v = infos[0][i];
    OrtTensorTypeAndShapeInfo* ti = nullptr;  // owned by the context; absent input: an error
    if (OrtStatus* st = a.ShapeInferContext_GetInputTypeShape(sctx, i, &ti)) a.ReleaseStatus(st);
    if (!ti) {
      v.present = false;
      continue;
    }
    if (!a.TensorTypeAndShape_HasShape(ti)) return;  // unknown rank: nothing to say before the run
    Ort::ConstTensorTypeAndShapeInfo info(ti);
    v.dtype = to_porta(info.GetElementType());
    v.shape = info.GetShape();
    std::vector<const char*> names(v.shape.size(), nullptr);
    if (!names.empty()) info.GetSymbolicDimensions(names.data(), names.size());
    for (size_t d = 0; d < v.shape.size(); ++d)
      if (v.shape[d] < 0) {
        int64_t k = static_cast<int64_t>(unknown.size());
        unknown.push_back({{1009 + 2 * k, 2003 + 3 * k}, names[d] ? names[d] : ""});
        v.shape[d] = -1 - k;  // marker, replaced per run below
      }
  }
  infos[1] = infos[0];
  for (int run = 0; run < 2; ++run)
    for (porta::ValueInfo& v : infos[run])
      for (int64_t& d : v.shape)
        if (d < 0) d = unknown[-1 - d].probe[run];
  int n_out = porta::detail::default_output_count(op, attrs);
  std::vector<porta::ValueInfo> outs[2];
  try {
    for (int run = 0; run < 2; ++run) outs[run] = porta::detail::infer_outputs(op, attrs, infos[run], n_out, "");
  } catch (const porta::Error&) {
    if (unknown.empty() && op.host_inputs.empty()) throw;  // a real mismatch, in porta's words
    return;  // the probes did not fit the op (or shapes need input values): left to the run
  }
  for (size_t i = 0; i < outs[0].size(); ++i) {
    OrtTensorTypeAndShapeInfo* raw = nullptr;
    check(a.CreateTensorTypeAndShapeInfo(&raw));
    Ort::TensorTypeAndShapeInfo owner(raw);
    check(a.SetTensorElementType(raw, to_ort(outs[0][i].dtype)));
    porta::Shape shape = outs[0][i].shape;
    std::vector<std::string> names(shape.size());
    bool same_rank = outs[1][i].shape.size() == shape.size();
    for (size_t d = 0; d < shape.size(); ++d) {
      if (same_rank && shape[d] == outs[1][i].shape[d] && op.host_inputs.empty()) continue;
      shape[d] = -1;
      for (const Unknown& u : unknown)
        if (same_rank && outs[0][i].shape[d] == u.probe[0] && outs[1][i].shape[d] == u.probe[1]) names[d] = u.name;
      // ORT reads an unnamed -1 as the value -1, which later checks compare; a fresh name keeps
      // the dimension unknown.
      if (names[d].empty()) names[d] = porta::str("porta_dim_", next_dim_name.fetch_add(1));
    }
    if (!same_rank) return;  // rank depends on the probes: nothing reliable to say
    check(a.SetDimensions(raw, shape.data(), shape.size()));
    std::vector<const char*> name_ptrs;
    for (auto& n : names) name_ptrs.push_back(n.c_str());
    if (!name_ptrs.empty()) check(a.SetSymbolicDimensions(raw, name_ptrs.data(), name_ptrs.size()));
    check(a.ShapeInferContext_SetOutputTypeShape(sctx, i, raw));
  }
}

/// An OrtCustomOp for one porta op (ORT reads the function pointers; `self` recovers us).
struct PortaCustomOp : OrtCustomOp {
  const OpSchema* op = nullptr;

  static const OpSchema& schema(const OrtCustomOp* o) { return *static_cast<const PortaCustomOp*>(o)->op; }

  explicit PortaCustomOp(const OpSchema* schema_) : OrtCustomOp{}, op(schema_) {
    version = ORT_API_VERSION;
    GetName = [](const OrtCustomOp* o) { return schema(o).name.c_str(); };
    GetExecutionProviderType = [](const OrtCustomOp*) -> const char* { return nullptr; };  // cpu
    GetInputType = [](const OrtCustomOp*, size_t) { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; };
    GetOutputType = [](const OrtCustomOp*, size_t) { return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED; };
    GetInputTypeCount = [](const OrtCustomOp* o) { return schema(o).inputs.size(); };
    GetOutputTypeCount = [](const OrtCustomOp* o) { return schema(o).outputs.size(); };
    GetInputCharacteristic = [](const OrtCustomOp* o, size_t i) {
      const std::string& n = schema(o).inputs.at(i);
      return variadic_name(n) ? INPUT_OUTPUT_VARIADIC
                              : optional_name(n) ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
    };
    GetOutputCharacteristic = [](const OrtCustomOp* o, size_t i) {
      const std::string& n = schema(o).outputs.at(i);
      return variadic_name(n) ? INPUT_OUTPUT_VARIADIC
                              : optional_name(n) ? INPUT_OUTPUT_OPTIONAL : INPUT_OUTPUT_REQUIRED;
    };
    GetInputMemoryType = [](const OrtCustomOp*, size_t) { return OrtMemTypeDefault; };
    GetVariadicInputMinArity = [](const OrtCustomOp*) { return 1; };
    GetVariadicInputHomogeneity = [](const OrtCustomOp*) { return 0; };
    GetVariadicOutputMinArity = [](const OrtCustomOp*) { return 1; };
    GetVariadicOutputHomogeneity = [](const OrtCustomOp*) { return 0; };
    CreateKernelV2 = [](const OrtCustomOp* o, const OrtApi*, const OrtKernelInfo* info,
                        void** kernel) -> OrtStatusPtr {
      return guarded([&] {
        auto k = std::make_unique<NodeKernel>();
        k->op = &schema(o);
        k->attrs = read_attributes(*k->op, info);
        *kernel = k.release();
      });
    };
    KernelComputeV2 = [](void* k, OrtKernelContext* ctx) -> OrtStatusPtr {
      return guarded([&] { compute(*static_cast<NodeKernel*>(k), ctx); });
    };
    KernelDestroy = [](void* k) { delete static_cast<NodeKernel*>(k); };
    InferOutputShapeFn = [](const OrtCustomOp* o, OrtShapeInferContext* ctx) -> OrtStatusPtr {
      return guarded([&] { infer_shapes(schema(o), ctx); });
    };
    GetStartVersion = [](const OrtCustomOp* o) { return schema(o).since_version; };
    GetEndVersion = [](const OrtCustomOp* o) {
      return schema(o).until_version > 0 ? schema(o).until_version : INT_MAX;
    };
  }
};

bool onnx_domain(const std::string& d) { return d.empty() || d == "ai.onnx" || d == "ai.onnx.ml"; }

/// The custom ops, made once per process (they live as long as the library).
const std::map<std::string, std::vector<std::unique_ptr<PortaCustomOp>>>& custom_ops() {
  static const auto ops = [] {
    std::map<std::string, std::vector<std::unique_ptr<PortaCustomOp>>> m;
    for (const OpSchema* op : porta::all_ops())
      if (!onnx_domain(op->domain)) m[op->domain].push_back(std::make_unique<PortaCustomOp>(op));
    return m;
  }();
  return ops;
}

}  // namespace

std::vector<OrtCustomOpDomain*> make_custom_op_domains() {
  const OrtApi& a = api();
  std::vector<OrtCustomOpDomain*> out;
  try {
    for (auto& [domain, ops] : custom_ops()) {
      OrtCustomOpDomain* d = nullptr;
      check(a.CreateCustomOpDomain(domain.c_str(), &d));
      out.push_back(d);
      for (auto& op : ops) check(a.CustomOpDomain_Add(d, op.get()));
    }
  } catch (...) {
    for (OrtCustomOpDomain* d : out) a.ReleaseCustomOpDomain(d);
    throw;
  }
  return out;
}

}  // namespace porta_ort

/// ORT's RegisterCustomOpsLibrary(_V2) entry point: adds one custom-op domain per domain of
/// porta's non-ONNX ops to the session options.
extern "C" __attribute__((visibility("default"))) OrtStatus* RegisterCustomOps(OrtSessionOptions* options,
                                                                               const OrtApiBase* base) {
  if (!porta_ort::init_api(base)) {
    const OrtApi* old = base->GetApi(1);  // every runtime has version 1, enough for a status
    return old->CreateStatus(ORT_FAIL, porta_ort::old_runtime_message(base).c_str());
  }
  return porta_ort::guarded([&] {
    // ORT needs the domains until every session using them is gone: they are kept to the end.
    static std::mutex mutex;
    static std::vector<OrtCustomOpDomain*> keep;
    std::vector<OrtCustomOpDomain*> domains = porta_ort::make_custom_op_domains();
    {
      std::lock_guard lock(mutex);
      keep.insert(keep.end(), domains.begin(), domains.end());
    }
    for (OrtCustomOpDomain* d : domains) porta_ort::check(porta_ort::api().AddCustomOpDomain(options, d));
  });
}
