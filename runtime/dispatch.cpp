// porta runtime — resolution of (op, device, dtype) and eager calls.
//
// Resolution order (ARCHITECTURE.md): native kernel -> composite on the same backend ->
// CPU fallback with copies -> error naming the backends that have the op. The answer is
// cached per (op, device, dtype); a kernel's `supports` is asked per call.
#include "porta/dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/eager.hpp"
#include "runtime/registry.hpp"

namespace porta {

std::string_view path_name(Path p) {
  switch (p) {
    case Path::native: return "native";
    case Path::composite: return "composite";
    case Path::fallback: return "fallback:cpu";
    case Path::folded: return "folded";
    case Path::unsupported: return "unsupported";
  }
  return "?";
}

static std::atomic<bool> g_strict{false};
void set_strict(bool s) { g_strict = s; }
bool strict() { return g_strict; }

namespace {

std::string backends_with(const OpSchema& op) {
  std::string out;
  for (const KernelDef* k : kernels_for(op)) {
    if (!out.empty()) out += ", ";
    out += str(device_type_name(k->backend), k->impl.name.empty() ? "" : str(" '", k->impl.name, "'"), "(",
               dtype_set_names(k->dtypes), ")");
  }
  return out.empty() ? "none" : out;
}

// The porta-internal input a call carries that kernel `k` does not declare in
// KernelDef::fused_activations (Conv's `porta_residual`, which graph fusion adds), or "".
// A kernel that would ignore such an input must not take the call.
std::string undeclared_internal_input(const KernelDef& k, const KernelContext& call) {
  const std::vector<std::string>& names = call.op->inputs;
  for (size_t i = 0; i < names.size() && i < call.inputs.size(); ++i) {
    if (names[i].rfind("porta_", 0) != 0 || !call.inputs[i].defined()) continue;
    std::string name = names[i].back() == '?' ? names[i].substr(0, names[i].size() - 1) : names[i];
    if (!detail::kernel_fuses(k, name)) return name;
  }
  return "";
}

// The fused activation (`porta_activation`, set by graph fusion) a call asks for, or "".
std::string fused_activation_of(const KernelContext& call) {
  return call.attrs ? call.attrs->get_string("porta_activation", "") : std::string();
}

// The half type of a call that a session marks (attribute `porta_f32_output`) to write f32
// from bf16/f16 inputs (KernelDef::f32_output), or f32 when the call is not such.
DType half_input_of_f32_output(const KernelContext& call) {
  if (!call.attrs || call.attrs->get_int("porta_f32_output", 0) == 0) return DType::f32;
  const int d = call.op->dispatch_input;
  if (d < 0 || d >= static_cast<int>(call.inputs.size()) || !call.inputs[d].defined()) return DType::f32;
  if (call.outputs.empty() || !call.outputs[0].defined() || call.outputs[0].dtype() != DType::f32) return DType::f32;
  const DType in = call.inputs[d].dtype();
  return in == DType::bf16 || in == DType::f16 ? in : DType::f32;
}


// The low format a session asks a kernel to compute an f32 call in (attribute `porta_compute`,
// KernelDef::computes_in), or f32.
DType compute_of(const KernelContext& call) {
  const int64_t code = call.attrs ? call.attrs->get_int("porta_compute", 0) : 0;
  return code == 16 ? DType::bf16 : code == 10 ? DType::f16 : DType::f32;
}

// Why a kernel does not take a call ("" when it does): only asked for a concrete call.
std::string declines(const KernelDef& k, const KernelContext* call) {
  if (!call) return std::string();
  if (std::string name = undeclared_internal_input(k, *call); !name.empty())
    return str("does not take the fused input ", name);
  if (std::string act = fused_activation_of(*call); !act.empty() && !detail::kernel_fuses(k, act))
    return str("does not apply the fused activation ", act);
  if (DType half = half_input_of_f32_output(*call); half != DType::f32 && !k.f32_output)
    return str("does not write an f32 output from ", dtype_name(half), " inputs");
  if (DType c = compute_of(*call); c != DType::f32 && !dtype_in(k.computes_in, c))
    return str("does not compute in ", dtype_name(c), " inside the kernel");
  return k.supports ? k.supports(*call) : std::string();
}

Resolution compute(const OpSchema& op, Device device, DType dtype,
                   const KernelContext* call) {
  Resolution r;
  std::string declined;
  bool have_backend_kernel = false;
  for (const KernelDef* k : kernels_for(op)) {
    if (!dtype_in(k->dtypes, dtype) || k->backend != device.type) continue;
    have_backend_kernel = true;
    if (std::string why = declines(*k, call); !why.empty()) {
      declined += str(declined.empty() ? "" : "; ", kernel_label(*k), " declined: ", why);
      continue;
    }
    r.path = Path::native;
    r.kernel = k;
    r.reason = str(kernel_label(*k), " for ", dtype_name(dtype), declined.empty() ? "" : str(" (", declined, ")"));
    return r;
  }
  std::string why_not_native =
      have_backend_kernel ? declined
                          : str("no ", device_type_name(device.type), " kernel for ", op.name, " ",
                                dtype_name(dtype));
  if (op.composite) {
    r.path = Path::composite;
    r.reason = str(why_not_native, "; runs its decomposition on ", device.str());
    return r;
  }
  if (device.type != DeviceType::cpu)
    for (const KernelDef* k : kernels_for(op)) {
      if (k->backend != DeviceType::cpu || !dtype_in(k->dtypes, dtype) || !declines(*k, call).empty()) continue;
      r.path = Path::fallback;
      r.kernel = k;
      r.reason = str(why_not_native, "; no decomposition; runs on cpu with copies",
                     k->impl.name.empty() ? "" : str(" (", kernel_label(*k), ")"));
      return r;
    }
  r.path = Path::unsupported;
  r.reason = str("[", op.name, "] no kernel for dtype ", dtype_name(dtype), " on ", device.str(),
                 declined.empty() ? "" : str(" (", declined, ")"),
                 "; kernels exist for: ", backends_with(op));
  return r;
}

struct CacheKey {
  const OpSchema* op;
  Device device;
  DType dtype;
  bool operator==(const CacheKey& o) const {
    return op == o.op && device == o.device && dtype == o.dtype;
  }
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const noexcept {
    return std::hash<const void*>()(k.op) ^ (std::hash<Device>()(k.device) << 8) ^
           (static_cast<size_t>(k.dtype) << 4);
  }
};

struct ResolutionCache {
  std::shared_mutex mutex;
  std::unordered_map<CacheKey, Resolution, CacheKeyHash> map;
  uint64_t generation = 0;
};

ResolutionCache& cache() {
  static ResolutionCache* c = new ResolutionCache();
  return *c;
}

}  // namespace

const Resolution& resolve(const OpSchema& op, Device device, DType dtype) {
  ResolutionCache& c = cache();
  uint64_t gen = detail::registry_generation();
  CacheKey key{&op, device, dtype};
  {
    std::shared_lock lock(c.mutex);
    if (c.generation == gen) {
      auto it = c.map.find(key);
      if (it != c.map.end()) return it->second;
    }
  }
  Resolution r = compute(op, device, dtype, nullptr);
  std::unique_lock lock(c.mutex);
  if (c.generation != gen) {
    c.map.clear();
    c.generation = gen;
  }
  return c.map.emplace(key, std::move(r)).first->second;
}

Resolution resolve_call(const KernelContext& call, DType dtype) {
  const Resolution& r = resolve(*call.op, call.device, dtype);
  // Only kernels with a `supports` check can change the answer for a concrete call.
  if ((r.path == Path::native || r.path == Path::fallback) && !r.kernel->supports && !detail::carries_internal_operands(call))
    return r;
  if (r.path == Path::native || r.path == Path::fallback) return compute(*call.op, call.device, dtype, &call);
  return r;
}

std::string explain(std::string_view op_name, Device device, DType dtype) {
  const OpSchema* op = find_op(op_name);
  if (!op) throw Unsupported(str("[explain] ", describe_unknown_op(op_name)));
  const Resolution& r = resolve(*op, device, dtype);
  std::string path(path_name(r.path));
  if (r.path == Path::fallback && strict())
    return str(op_name, " on ", device.str(), " (", dtype_name(dtype),
               "): refused (strict mode forbids CPU fallback): ", r.reason);
  return str(op_name, " on ", device.str(), " (", dtype_name(dtype), "): ", path, ": ", r.reason);
}

namespace {

// "alpha (float), axis (int)": what an op declares, for messages (porta's internal attributes,
// porta_*, left out).
std::string declared_attributes(const OpSchema& op) {
  std::string out;
  for (auto& d : op.attrs)
    if (!d.name.starts_with("porta_")) out += str(out.empty() ? "" : ", ", d.name, " (", attr_type_name(d.type), ")");
  return out;
}

}  // namespace

Attributes complete_attributes(const OpSchema& op, const Attributes& given,
                               std::string_view context) {
  // From a model (a node named in `context`) a bad attribute makes the model invalid; from a
  // call, the call.
  auto fail = [&](const std::string& m) -> void {
    if (context.empty()) throw InvalidArgument(m);
    throw InvalidModel(m);
  };
  Attributes out;
  for (auto& [name, value] : given.items()) {
    const AttrDef* def = nullptr;
    for (auto& d : op.attrs)
      if (d.name == name) def = &d;
    auto got = static_cast<AttrType>(value.index());
    if (!def) {
      std::string has = declared_attributes(op);
      fail(str("[", op.qualified_name(), "] ", context, "unknown attribute '", name, "' (", attr_type_name(got), "): ",
               op.qualified_name(), has.empty() ? " has no attributes" : str(" has ", has)));
    }
    // ONNX types every attribute; an int where the schema says float is a mistake to report,
    // not to convert.
    if (got != def->type)
      fail(str("[", op.qualified_name(), "] ", context, "attribute '", name, "' should be ", attr_type_name(def->type),
               ", got ", attr_type_name(got)));
    out.set(name, value);
  }
  for (auto& d : op.attrs) {
    if (out.has(d.name)) continue;
    if (d.default_value) out.set(d.name, *d.default_value);
    else if (d.required)
      throw InvalidModel(str("[", op.qualified_name(), "] ", context, "required attribute '", d.name,
                             "' (", attr_type_name(d.type), ") is missing"));
  }
  return out;
}

namespace detail {

bool carries_internal_operands(const KernelContext& call) {
  const std::vector<std::string>& names = call.op->inputs;
  for (size_t i = 0; i < names.size() && i < call.inputs.size(); ++i)
    if (names[i].rfind("porta_", 0) == 0 && call.inputs[i].defined()) return true;
  // Attributes a session sets for its kernels (porta_activation, porta_f32_output,
  // porta_compute...) can make a kernel decline; one pass, no lookups by name.
  if (call.attrs)
    for (const auto& item : call.attrs->items())
      if (item.first.rfind("porta_", 0) == 0) return true;
  return false;
}

bool every_kernel_declares(const OpSchema& op, DType dtype, Device device,
                           const std::function<bool(const KernelDef&)>& declares) {
  bool native = false;
  for (const KernelDef* k : kernels_for(op)) {
    if (!dtype_in(k->dtypes, dtype) || (k->backend != device.type && k->backend != DeviceType::cpu)) continue;
    native |= k->backend == device.type;
    if (!declares(*k)) return false;
  }
  return native;
}

int64_t kernel_limit(const OpSchema& op, DType dtype, Device device, const std::string& name) {
  int64_t limit = INT64_MAX;
  for (const KernelDef* k : kernels_for(op)) {
    if (!dtype_in(k->dtypes, dtype) || k->backend != device.type) continue;
    for (const auto& [key, value] : k->limits)
      if (key == name) limit = std::min(limit, value);
  }
  return limit;
}

}  // namespace detail

}  // namespace porta
