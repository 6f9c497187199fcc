// plugins/ort — porta as an ONNX Runtime plugin execution provider ("porta").
//
// The factory offers one OrtEpDevice per available porta device: cpu on ORT's CPU hardware
// device, and every other device (vulkan:N, cuda:N, hip:N, a plugin's kind) on a hardware
// device the factory creates. GetCapability claims the nodes porta's resolver runs on the
// chosen device (native kernel or composite; with strict=0 also those porta would run through
// its CPU fallback) and whose import porta accepts, grouped into connected subgraphs; Compile
// turns each subgraph into an ONNX model and a porta Session, so porta's placement, fusion and
// memory planning apply inside it.
// Memory: on cpu, fused nodes read and write ORT's CPU tensors. Every other device gets an ORT
// memory info and allocator whose blocks are porta tensors on the device, and a data transfer
// (porta's host<->device copies), so values between porta subgraphs stay on the device and ORT
// copies only where a CPU-EP node or a graph input/output needs host memory.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>

#include "ort_common.hpp"
#include "ort_graph.hpp"
#include "ort_memory.hpp"
#include "porta/backend.hpp"
#include "porta/dispatch.hpp"
#include "porta/session.hpp"
#include "porta/util.hpp"

namespace porta_ort {
namespace {

constexpr const char* kEpName = "porta";

/// Why a porta device cannot be used ("" when it can).
std::string unavailable_reason(porta::Device d) {
  try {
    porta::backend_for(d);
    return "";
  } catch (const porta::Error& e) {
    return e.what();
  }
}

/// Parses a 0/1 provider option; throws InvalidArgument naming the option and value.
bool flag_option(const std::string& name, const std::string& value) {
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false" || value.empty()) return false;
  throw porta::InvalidArgument(porta::str("[porta_ort] provider option '", name, "' should be 0 or 1, got '", value, "'"));
}

std::string session_option(const OrtSessionOptions* so, const std::string& name) {
  std::string key = std::string("ep.") + kEpName + "." + name;
  int has = 0;
  check(api().HasSessionConfigEntry(so, key.c_str(), &has));
  if (!has) return "";
  size_t size = 0;
  check(api().GetSessionConfigEntry(so, key.c_str(), nullptr, &size));
  std::string v(size, '\0');
  check(api().GetSessionConfigEntry(so, key.c_str(), v.data(), &size));
  if (!v.empty() && v.back() == '\0') v.pop_back();
  return v;
}

struct EpOptions {
  porta::Device device;
  bool strict = false;
  std::string profiling;  ///< "" off, "1" stderr, else a file to append to
};

// ---------------------------------------------------------------------------------------
// One compiled subgraph: a porta Session and the names of the fused node's inputs/outputs.

struct Compiled {
  std::string name;
  std::vector<std::string> inputs, outputs;
  std::unique_ptr<porta::Session> session;
  std::mutex mutex;  // a porta Session runs one call at a time
  std::string profiling;

  void run(OrtKernelContext* raw) {
    Ort::KernelContext ctx(raw);
    std::map<std::string, porta::Tensor> feeds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      Ort::ConstValue v = ctx.GetInput(i);
      auto ti = v.GetTensorTypeAndShapeInfo();
      feeds[inputs[i]] = as_porta(v.GetTensorRawData(), ti.GetShape(), to_porta(ti.GetElementType()));
    }
    std::lock_guard lock(mutex);
    std::vector<porta::Tensor> outs = session->run(feeds);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const porta::Tensor& out = outs.at(i);
      Ort::UnownedValue o = ctx.GetOutput(i, out.shape());
      porta::DType expected = to_porta(o.GetTensorTypeAndShapeInfo().GetElementType());
      if (expected != out.dtype())
        throw porta::DTypeError(porta::str("[porta_ort] ", name, ": output '", outputs[i], "' should be ",
                                           porta::dtype_name(expected), " (ORT's graph), porta computed ",
                                           porta::dtype_name(out.dtype())));
      if (!out.nbytes()) continue;
      // ORT's buffer: a porta block on the device (copied on the device) or host memory.
      as_porta(o.GetTensorMutableRawData(), out.shape(), out.dtype()).copy_(out);
    }
    if (!profiling.empty()) write_profile();
  }

  void write_profile() {
    std::ostringstream os;
    for (const porta::NodeProfile& p : session->profile())
      os << "[porta_ort] " << name << " node=" << p.node << " op=" << p.op << " device=" << p.device.str()
         << " us=" << p.time_us << "\n";
    if (profiling == "1") {
      std::cerr << os.str();
    } else {
      std::ofstream f(profiling, std::ios::app);
      if (!f)
        throw porta::InvalidArgument(porta::str("[porta_ort] provider option 'profiling': cannot write '", profiling, "'"));
      f << os.str();
    }
  }
};

struct ComputeInfo : OrtNodeComputeInfo {
  Compiled* compiled;
  explicit ComputeInfo(Compiled* c) : OrtNodeComputeInfo{}, compiled(c) {
    ort_version_supported = ORT_API_VERSION;
    CreateState = [](OrtNodeComputeInfo* self, OrtNodeComputeContext*, void** state) noexcept -> OrtStatus* {
      *state = static_cast<ComputeInfo*>(self)->compiled;
      return nullptr;
    };
    Compute = [](OrtNodeComputeInfo*, void* state, OrtKernelContext* ctx) noexcept -> OrtStatus* {
      return guarded([&] { static_cast<Compiled*>(state)->run(ctx); });
    };
    ReleaseState = [](OrtNodeComputeInfo*, void*) noexcept {};
  }
};

// ---------------------------------------------------------------------------------------
// The execution provider.

struct PortaEp : OrtEp {
  EpOptions options;
  std::vector<std::unique_ptr<Compiled>> compiled;

  /// Whether porta takes this node on the chosen device (see the file comment).
  bool claims(const OrtNode* node) const {
    if (node_has_subgraphs(node)) return false;
    const porta::OpSchema* op = porta::find_op(node_domain(node), node_op(node));
    if (!op) return false;
    std::vector<const OrtValueInfo*> ins = node_inputs(node), outs = node_outputs(node);
    std::optional<porta::DType> dispatch;
    auto dtype_of = [&](const OrtValueInfo* v) -> std::optional<porta::DType> {
      ValueType t = value_type(v);
      if (!t.is_tensor) return std::nullopt;
      try {
        return to_porta(t.elem);
      } catch (const porta::Error&) {
        return std::nullopt;
      }
    };
    for (const OrtValueInfo* v : ins)
      if (v && !dtype_of(v)) return false;
    for (const OrtValueInfo* v : outs)
      if (v && !dtype_of(v)) return false;
    int di = op->dispatch_input;
    if (di >= 0 && di < static_cast<int>(ins.size()) && ins[di])
      dispatch = dtype_of(ins[di]);
    else if (!outs.empty() && outs[0])
      dispatch = dtype_of(outs[0]);
    if (!dispatch) return false;
    const porta::Resolution& r = porta::resolve(*op, options.device, *dispatch);
    switch (r.path) {
      case porta::Path::native:
      case porta::Path::composite: return true;
      case porta::Path::fallback: return !options.strict;
      default: return false;
    }
  }

  /// Whether porta's ONNX import accepts the node on its own (its opset, attribute values):
  /// a node it refuses stays with ORT rather than failing the session at Compile.
  static bool imports(const OrtGraph* graph, const OrtNode* node) {
    OrtGraph* view = nullptr;
    check(api().Graph_GetGraphView(graph, &node, 1, &view));
    std::unique_ptr<OrtGraph, void (*)(OrtGraph*)> owner(view, [](OrtGraph* g) { api().ReleaseGraph(g); });
    auto values = [&](bool inputs) {
      size_t n = 0;
      check(inputs ? api().Graph_GetNumInputs(view, &n) : api().Graph_GetNumOutputs(view, &n));
      std::vector<const OrtValueInfo*> v(n);
      if (n) check(inputs ? api().Graph_GetInputs(view, v.data(), n) : api().Graph_GetOutputs(view, v.data(), n));
      return v;
    };
    try {
      std::string bytes = graph_to_model(view, values(true), values(false)).SerializeAsString();
      porta::Model::from_bytes(bytes.data(), bytes.size());
      return true;
    } catch (const porta::Error&) {
      return false;
    }
  }

  void get_capability(const OrtGraph* graph, OrtEpGraphSupportInfo* info) {
    std::vector<const OrtNode*> nodes = graph_nodes(graph);  // topologically sorted
    size_t n = nodes.size();
    std::vector<bool> ok(n);
    for (size_t i = 0; i < n; ++i) ok[i] = claims(nodes[i]) && imports(graph, nodes[i]);
    // Runs of claimed nodes in topological order: a path between two nodes of one run cannot
    // leave it (a node before the run cannot follow its first node, one after cannot precede
    // its last), so each run, and each connected part of it, can be fused. Parts: union-find
    // over the producer -> consumer edges inside the run.
    std::vector<size_t> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&](size_t x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    size_t i = 0;
    while (i < n) {
      if (!ok[i]) {
        ++i;
        continue;
      }
      size_t end = i;
      std::map<std::string, size_t> producer;
      while (end < n && ok[end]) {
        for (const OrtValueInfo* v : node_inputs(nodes[end])) {
          if (!v) continue;
          auto it = producer.find(value_name(v));
          if (it != producer.end()) parent[find(end)] = find(it->second);
        }
        for (const OrtValueInfo* v : node_outputs(nodes[end]))
          if (v) producer[value_name(v)] = end;
        ++end;
      }
      std::map<size_t, std::vector<const OrtNode*>> parts;
      for (size_t k = i; k < end; ++k) parts[find(k)].push_back(nodes[k]);
      for (auto& [root, group] : parts) {
        OrtNodeFusionOptions fusion{};
        fusion.ort_version_supported = ORT_API_VERSION;
        fusion.drop_constant_initializers = true;  // porta keeps them (as session constants)
        check(ep_api().EpGraphSupportInfo_AddNodesToFuse(info, group.data(), group.size(), &fusion));
      }
      i = end;
    }
  }

  void compile(const OrtGraph** graphs, const OrtNode** fused, size_t count, OrtNodeComputeInfo** infos) {
    for (size_t k = 0; k < count; ++k) infos[k] = nullptr;
    for (size_t k = 0; k < count; ++k) {
      std::vector<const OrtValueInfo*> ins = node_inputs(fused[k]), outs = node_outputs(fused[k]);
      onnx::ModelProto model = graph_to_model(graphs[k], ins, outs);
      std::string bytes = model.SerializeAsString();
      auto c = std::make_unique<Compiled>();
      c->name = node_name(fused[k]);
      for (auto* v : ins) c->inputs.push_back(value_name(v));
      for (auto* v : outs) c->outputs.push_back(value_name(v));
      porta::SessionOptions so;
      so.device = options.device;
      so.strict = options.strict;
      so.profile = !options.profiling.empty();
      c->profiling = options.profiling;
      c->session = std::make_unique<porta::Session>(porta::Model::from_bytes(bytes.data(), bytes.size()), so);
      infos[k] = new ComputeInfo(c.get());
      compiled.push_back(std::move(c));
    }
  }

  explicit PortaEp(EpOptions o) : OrtEp{}, options(std::move(o)) {
    ort_version_supported = ORT_API_VERSION;
    GetName = [](const OrtEp*) noexcept { return kEpName; };
    GetCapability = [](OrtEp* self, const OrtGraph* g, OrtEpGraphSupportInfo* info) noexcept -> OrtStatus* {
      return guarded([&] { static_cast<PortaEp*>(self)->get_capability(g, info); });
    };
    Compile = [](OrtEp* self, const OrtGraph** graphs, const OrtNode** fused, size_t count,
                 OrtNodeComputeInfo** infos, OrtNode** /*ep_context_nodes*/) noexcept -> OrtStatus* {
      return guarded([&] { static_cast<PortaEp*>(self)->compile(graphs, fused, count, infos); });
    };
    ReleaseNodeComputeInfos = [](OrtEp*, OrtNodeComputeInfo** infos, size_t n) noexcept {
      for (size_t i = 0; i < n; ++i) delete static_cast<ComputeInfo*>(infos[i]);
    };
  }
};

// ---------------------------------------------------------------------------------------
// The factory.

struct PortaEpFactory : OrtEpFactory {
  std::vector<OrtHardwareDevice*> created;  // hardware devices made for non-cpu porta devices
  std::vector<OrtCustomOpDomain*> domains;  // porta's custom ops, so ai.porta models load
  std::map<std::string, std::pair<porta::Device, OrtMemoryInfo*>> memory;  // by porta device name
  DataTransfer transfer;
  std::string version = "0.1.0";

  /// The memory info of a non-cpu porta device (made once).
  OrtMemoryInfo* memory_info(porta::Device d) {
    auto it = memory.find(d.str());
    if (it != memory.end()) return it->second.second;
    OrtMemoryInfo* info = nullptr;
    std::string name = "porta:" + d.str();
    check(api().CreateMemoryInfo_V2(name.c_str(), OrtMemoryInfoDeviceType_GPU, vendor_id(d), d.index,
                                    OrtDeviceMemoryType_DEFAULT, 0, OrtDeviceAllocator, &info));
    memory[d.str()] = {d, info};
    transfer.ours.push_back(ep_api().MemoryInfo_GetMemoryDevice(info));
    return info;
  }

  OrtAllocator* create_allocator(const OrtMemoryInfo* info) {
    if (!info) return nullptr;
    const OrtMemoryDevice* want = ep_api().MemoryInfo_GetMemoryDevice(info);
    for (auto& [name, entry] : memory)
      if (ep_api().MemoryDevice_AreEqual(want, ep_api().MemoryInfo_GetMemoryDevice(entry.second)))
        return new DeviceAllocator(entry.first, entry.second);
    return nullptr;  // ORT's CPU allocator
  }

  /// "cuda: <porta's reason>; hip: ..." for the device kinds porta cannot use here.
  static std::string unavailable_devices() {
    std::string out;
    auto add = [&](porta::Device d, const std::string& why) {
      out += porta::str(out.empty() ? "" : "; ", d.str(), ": ", why);
    };
    for (porta::DeviceType t : {porta::DeviceType::cuda, porta::DeviceType::hip, porta::DeviceType::vulkan}) {
      porta::Backend* b = porta::find_backend(t);
      int count = b ? b->device_count() : 1;
      for (int i = 0; i < count; ++i) {
        std::string why = unavailable_reason({t, i});
        if (!why.empty()) add({t, i}, why);
      }
    }
    return out;
  }

  void supported_devices(const OrtHardwareDevice* const* devices, size_t num, OrtEpDevice** out, size_t max,
                         size_t* n_out) {
    const OrtApi& a = api();
    *n_out = 0;
    const OrtHardwareDevice* ort_cpu = nullptr;
    for (size_t i = 0; i < num; ++i)
      if (a.HardwareDevice_Type(devices[i]) == OrtHardwareDeviceType_CPU) ort_cpu = devices[i];
    std::string unavailable = unavailable_devices();
    for (porta::Device d : porta::all_devices()) {
      if (*n_out >= max) break;
      if (!unavailable_reason(d).empty()) continue;
      porta::Capabilities caps = porta::backend_for(d).capabilities(d.index);
      Ort::KeyValuePairs meta, opts;
      meta.Add("porta.device", d.str().c_str());
      meta.Add("porta.name", caps.name.c_str());
      meta.Add("porta.available", "1");
      meta.Add("porta.unavailable", unavailable.c_str());
      opts.Add("device", d.str().c_str());
      const OrtHardwareDevice* hw = nullptr;
      if (d.type == porta::DeviceType::cpu) {
        hw = ort_cpu;
      } else {
        Ort::KeyValuePairs hw_meta;
        hw_meta.Add("porta.device", d.str().c_str());
        OrtHardwareDevice* made = nullptr;
        check(ep_api().CreateHardwareDevice(OrtHardwareDeviceType_GPU, vendor_id(d), static_cast<uint32_t>(d.index),
                                            "porta", hw_meta, &made));
        created.push_back(made);
        hw = made;
      }
      if (!hw) continue;
      check(ep_api().CreateEpDevice(this, hw, meta, opts, &out[*n_out]));
      if (d.type != porta::DeviceType::cpu) check(ep_api().EpDevice_AddAllocatorInfo(out[*n_out], memory_info(d)));
      ++*n_out;
    }
  }

  OrtEp* create_ep(const OrtKeyValuePairs* const* metadata, size_t num, const OrtSessionOptions* so) {
    EpOptions o;
    std::string device = session_option(so, "device");
    if (device.empty() && num > 0 && metadata[0]) {
      const char* d = api().GetKeyValue(metadata[0], "porta.device");
      if (d) device = d;
    }
    o.device = porta::Device::parse(device.empty() ? "cpu" : device);
    porta::backend_for(o.device);  // BackendUnavailable with porta's reason
    o.strict = flag_option("strict", session_option(so, "strict"));
    o.profiling = session_option(so, "profiling");
    if (o.profiling == "0") o.profiling.clear();
    return new PortaEp(o);
  }

  PortaEpFactory() : OrtEpFactory{} {
    ort_version_supported = ORT_API_VERSION;
    GetName = [](const OrtEpFactory*) noexcept { return kEpName; };
    GetVendor = [](const OrtEpFactory*) noexcept { return "porta"; };
    GetVendorId = [](const OrtEpFactory*) noexcept -> uint32_t { return 0; };
    GetVersion = [](const OrtEpFactory* self) noexcept { return static_cast<const PortaEpFactory*>(self)->version.c_str(); };
    GetSupportedDevices = [](OrtEpFactory* self, const OrtHardwareDevice* const* devices, size_t num,
                             OrtEpDevice** out, size_t max, size_t* n_out) noexcept -> OrtStatus* {
      return guarded([&] { static_cast<PortaEpFactory*>(self)->supported_devices(devices, num, out, max, n_out); });
    };
    CreateEp = [](OrtEpFactory* self, const OrtHardwareDevice* const*, const OrtKeyValuePairs* const* metadata,
                  size_t num, const OrtSessionOptions* so, const OrtLogger*, OrtEp** ep) noexcept -> OrtStatus* {
      return guarded([&] { *ep = static_cast<PortaEpFactory*>(self)->create_ep(metadata, num, so); });
    };
    ReleaseEp = [](OrtEpFactory*, OrtEp* ep) noexcept { delete static_cast<PortaEp*>(ep); };
    ValidateCompiledModelCompatibilityInfo = [](OrtEpFactory*, const OrtHardwareDevice* const*, size_t, const char*,
                                                OrtCompiledModelCompatibility* c) noexcept -> OrtStatus* {
      *c = OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
      return nullptr;
    };
    CreateAllocator = [](OrtEpFactory* self, const OrtMemoryInfo* info, const OrtKeyValuePairs*,
                         OrtAllocator** allocator) noexcept -> OrtStatus* {
      return guarded([&] { *allocator = static_cast<PortaEpFactory*>(self)->create_allocator(info); });
    };
    ReleaseAllocator = [](OrtEpFactory*, OrtAllocator* a) noexcept { delete static_cast<DeviceAllocator*>(a); };
    CreateDataTransfer = [](OrtEpFactory* self, OrtDataTransferImpl** dt) noexcept -> OrtStatus* {
      auto* f = static_cast<PortaEpFactory*>(self);
      *dt = f->memory.empty() ? nullptr : &f->transfer;  // nothing to copy when only cpu is offered
      return nullptr;
    };
    IsStreamAware = [](const OrtEpFactory*) noexcept { return false; };
    // The domains of porta's non-ONNX ops come with the EP: a session with the porta EP loads
    // models with ai.porta (or plugin) nodes without RegisterCustomOpsLibrary. Claimed nodes run
    // in porta's subgraphs; unclaimed ones run as the custom ops' cpu kernels in ORT's CPU EP.
    GetNumCustomOpDomains = [](OrtEpFactory* self, size_t* n) noexcept -> OrtStatus* {
      return guarded([&] {
        auto* f = static_cast<PortaEpFactory*>(self);
        if (f->domains.empty()) f->domains = make_custom_op_domains();
        *n = f->domains.size();
      });
    };
    GetCustomOpDomains = [](OrtEpFactory* self, OrtCustomOpDomain** out, size_t n) noexcept -> OrtStatus* {
      return guarded([&] {
        auto* f = static_cast<PortaEpFactory*>(self);
        if (f->domains.empty()) f->domains = make_custom_op_domains();
        if (n < f->domains.size())
          throw porta::InvalidArgument(porta::str("[porta_ort] ONNX Runtime asked for ", n, " custom-op domains, porta has ",
                                                  f->domains.size()));
        for (size_t i = 0; i < f->domains.size(); ++i) out[i] = f->domains[i];
      });
    };
    CreateSyncStreamForDevice = [](OrtEpFactory*, const OrtMemoryDevice*, const OrtKeyValuePairs*,
                                   OrtSyncStreamImpl** stream) noexcept -> OrtStatus* {
      *stream = nullptr;
      return nullptr;
    };
  }

  ~PortaEpFactory() {
    for (OrtHardwareDevice* d : created) ep_api().ReleaseHardwareDevice(d);
    for (auto& [name, entry] : memory) api().ReleaseMemoryInfo(entry.second);
    for (OrtCustomOpDomain* d : domains) api().ReleaseCustomOpDomain(d);
  }
};

}  // namespace
}  // namespace porta_ort

/// ORT's RegisterExecutionProviderLibrary entry point: one factory, for the "porta" EP.
extern "C" __attribute__((visibility("default"))) OrtStatus* CreateEpFactories(
    const char* /*registered_name*/, const OrtApiBase* base, const OrtLogger* /*logger*/, OrtEpFactory** factories,
    size_t max_factories, size_t* num_factories) {
  if (!porta_ort::init_api(base)) {
    const OrtApi* old = base->GetApi(1);
    return old->CreateStatus(ORT_FAIL, porta_ort::old_runtime_message(base).c_str());
  }
  return porta_ort::guarded([&] {
    *num_factories = 0;
    if (max_factories < 1) throw porta::InvalidArgument("[porta_ort] ONNX Runtime offered no room for a factory");
    factories[0] = new porta_ort::PortaEpFactory();
    *num_factories = 1;
  });
}

extern "C" __attribute__((visibility("default"))) OrtStatus* ReleaseEpFactory(OrtEpFactory* factory) {
  delete static_cast<porta_ort::PortaEpFactory*>(factory);
  return nullptr;
}
