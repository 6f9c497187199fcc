// porta runtime — the op, kernel and backend registries.
#include "runtime/registry.hpp"

#include <algorithm>
#include <iostream>
#include <array>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "porta/error.hpp"
#include "porta/util.hpp"
#include "runtime/plugin_staging.hpp"

namespace porta {
namespace {

// porta's own ops: after ONNX's default domain, where a plain name looks.
constexpr std::string_view kPortaOwnDomain = "ai.porta";

// One entry of PORTA_DISABLE_KERNELS: "backend:Op" or "backend:Op:implementation", where Op
// may be qualified ("cpu:com.example::Swish").
struct DisabledEntry {
  std::string text, backend, op, impl;
};

struct Registry {
  std::shared_mutex mutex;
  std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> ops;  // by op_key
  // Kernels by KernelDef::op as registered: a plain name or a qualified one (see kernels_for).
  std::map<std::string, std::vector<std::unique_ptr<KernelDef>>, std::less<>> kernels;
  std::vector<DisabledEntry> disabled;
  std::vector<std::string> disabled_problems;  // entries that disable nothing, and why
  bool disabled_loaded = false;
  std::atomic<uint64_t> generation{1};
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: kernels may run during exit
  return *r;
}

// One slot per device kind. Lookups read the atomic pointer without a lock; a backend, once
// registered, is never destroyed (a rolled-back plugin's goes to `retired`), so a pointer
// handed out stays valid.
struct BackendTable {
  std::mutex mutex;
  std::array<std::atomic<Backend*>, kMaxDeviceTypes> slots{};
  std::array<std::unique_ptr<Backend>, kMaxDeviceTypes> owned;
  std::array<std::string, kMaxDeviceTypes> sources;
  std::vector<std::unique_ptr<Backend>> retired;
};

BackendTable& backends() {
  static auto* b = new BackendTable();  // never destroyed: storages free through it at exit
  return *b;
}

// Names before the first optional one, plus one for a variadic one: as in ONNX, a variadic
// input or output (Min, Max, Concat) takes one or more values.
int count_required(const std::vector<std::string>& names) {
  int n = 0;
  for (auto& s : names) {
    if (s.ends_with("?")) break;
    ++n;
    if (s.ends_with("...")) break;
  }
  return n;
}

bool is_default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// The op a name means (find_op's rules), with the registry's lock held.
const OpSchema* find_locked(const Registry& r, std::string_view name) {
  if (auto sep = name.find("::"); sep != std::string_view::npos) {
    auto it = r.ops.find(op_key(name.substr(0, sep), name.substr(sep + 2)));
    return it == r.ops.end() ? nullptr : it->second.get();
  }
  if (auto it = r.ops.find(name); it != r.ops.end()) return it->second.get();
  if (auto it = r.ops.find(op_key(kPortaOwnDomain, name)); it != r.ops.end()) return it->second.get();
  const OpSchema* only = nullptr;
  for (auto& [key, op] : r.ops)
    if (op->name == name) {
      if (only) return nullptr;  // several domains: the caller must say which
      only = op.get();
    }
  return only;
}

// Every kernel of an op, in the order the dispatcher tries them: those registered under its
// key, and those registered under its plain name when that name means this op (porta's own
// kernels name ai.porta ops without their domain).
std::vector<const KernelDef*> kernels_of_locked(const Registry& r, const OpSchema& op) {
  std::vector<const KernelDef*> out;
  std::string key = op.qualified_name();
  auto add = [&](std::string_view registered_as) {
    auto it = r.kernels.find(registered_as);
    if (it == r.kernels.end()) return;
    for (auto& k : it->second) out.push_back(k.get());
  };
  add(key);
  if (key != op.name && find_locked(r, op.name) == &op) {
    add(op.name);
    std::stable_sort(out.begin(), out.end(),
                     [](const KernelDef* a, const KernelDef* b) { return a->impl.priority > b->impl.priority; });
  }
  return out;
}

DisabledEntry parse_disabled(const std::string& item) {
  DisabledEntry e;
  e.text = item;
  size_t colon = item.find(':');
  e.backend = item.substr(0, colon);
  if (colon == std::string::npos) return e;
  std::string rest = item.substr(colon + 1);
  size_t end = 0;  // the op ends at the first ':' that is not half of a "::"
  while (end < rest.size()) {
    if (rest.compare(end, 2, "::") == 0) end += 2;
    else if (rest[end] == ':') break;
    else ++end;
  }
  e.op = rest.substr(0, end);
  if (end < rest.size()) e.impl = rest.substr(end + 1);
  return e;
}

// Why an entry disables no kernel ("" when it disables one): a typo would otherwise leave the
// kernel running while the user believes they test what runs without it.
std::string disabled_problem(const Registry& r, const DisabledEntry& e) {
  std::string what = str("PORTA_DISABLE_KERNELS entry '", e.text, "' disables nothing: ");
  const char* form = " (entries are BACKEND:OP or BACKEND:OP:IMPLEMENTATION, e.g. vulkan:Conv:implicit_gemm)";
  if (e.op.empty()) return str(what, "it names no op", form);
  auto kind = find_device_type(e.backend);
  if (!kind) {
    std::string known;
    for (DeviceType k : device_types()) known += str(known.empty() ? "" : ", ", device_type_name(k));
    return str(what, "no device kind '", e.backend, "' (known: ", known, ")");
  }
  const OpSchema* op = find_locked(r, e.op);
  if (!op) return str(what, "no op '", e.op, "'", form);
  std::string impls;
  bool any = false;
  for (const KernelDef* k : kernels_of_locked(r, *op)) {
    if (k->backend != *kind) continue;
    any = true;
    if (e.impl.empty() || k->impl.name == e.impl) return "";
    impls += str(impls.empty() ? "" : ", ", k->impl.name.empty() ? "(unnamed)" : k->impl.name);
  }
  if (!any)
    return str(what, op->qualified_name(), " has no ", e.backend, " kernel",
               find_backend(*kind) ? "" : str(" (this porta has no ", e.backend, " backend)"));
  return str(what, op->qualified_name(), " has no ", e.backend, " implementation '", e.impl, "' (it has: ", impls, ")");
}

void load_disabled_locked(Registry& r) {
  r.disabled.clear();
  r.disabled_problems.clear();
  r.disabled_loaded = true;
  const char* env = std::getenv("PORTA_DISABLE_KERNELS");
  if (!env) return;
  std::string s = env;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? s.size() : comma + 1;
    // trim spaces
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    if (item.empty()) continue;
    r.disabled.push_back(parse_disabled(item));
    if (std::string why = disabled_problem(r, r.disabled.back()); !why.empty()) {
      r.disabled_problems.push_back(why);
      std::cerr << "porta: warning: " << why << "\n";
    }
  }
}

// "backend:Op" disables every implementation of the op there, "backend:Op:name" one of them;
// Op is matched by what it names (a plain name as find_op resolves it, or a qualified one).
bool is_disabled(const Registry& r, const KernelDef& k, const OpSchema& op) {
  for (const DisabledEntry& e : r.disabled) {
    if (e.backend != device_type_name(k.backend)) continue;
    if (e.op != op.qualified_name() && find_locked(r, e.op) != &op) continue;
    if (e.impl.empty() || e.impl == k.impl.name) return true;
  }
  return false;
}

}  // namespace

std::string op_key(std::string_view domain, std::string_view name) {
  return is_default_domain(domain) ? std::string(name) : str(domain, "::", name);
}

std::string OpSchema::qualified_name() const { return op_key(domain, name); }

int OpSchema::min_inputs() const { return count_required(inputs); }
int OpSchema::max_inputs() const {
  if (!inputs.empty() && inputs.back().ends_with("...")) return -1;
  return static_cast<int>(inputs.size());
}
int OpSchema::min_outputs() const { return count_required(outputs); }
int OpSchema::max_outputs() const {
  if (!outputs.empty() && outputs.back().ends_with("...")) return -1;
  return static_cast<int>(outputs.size());
}

void register_op(OpSchema schema) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (schema.name.empty()) throw InvalidArgument("[registry] op schema without a name");
  if (schema.name.find(':') != std::string::npos || schema.domain.find(':') != std::string::npos)
    throw InvalidArgument(str("[registry] op '", schema.name, "' (domain '", schema.domain,
                              "'): names and domains should not contain ':'"));
  if (schema.domain == "ai.onnx") schema.domain.clear();
  std::string key = schema.qualified_name();
  if (r.ops.count(key))
    throw InvalidArgument(str("[registry] op '", key, "' is already registered"));
  if (!schema.infer)
    throw InvalidArgument(str("[registry] op '", key, "' has no shape inference"));
  r.ops.emplace(key, std::make_unique<OpSchema>(std::move(schema)));
  r.generation++;
}

void register_kernel(KernelDef kernel) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (!kernel.fn) throw InvalidArgument(str("[registry] kernel for '", kernel.op, "' has no function"));
  if (kernel.dtypes == 0)
    throw InvalidArgument(str("[registry] kernel for '", kernel.op, "' accepts no dtype"));
  auto& list = r.kernels[kernel.op];
  for (auto& k : list)
    if (k->backend == kernel.backend && (k->dtypes & kernel.dtypes) && k->impl.priority == kernel.impl.priority)
      throw InvalidArgument(str("[registry] a ", kernel_label(*k), " for '", kernel.op, "' with dtypes ",
                                dtype_set_names(k->dtypes & kernel.dtypes), " and priority ", k->impl.priority,
                                " is already registered (from ", k->source, "); another implementation for ",
                                "those dtypes needs a name and a different priority"));
  // Kept in the order the dispatcher tries them: by priority, highest first (stable).
  auto at = std::find_if(list.begin(), list.end(),
                         [&](auto& k) { return k->impl.priority < kernel.impl.priority; });
  list.insert(at, std::make_unique<KernelDef>(std::move(kernel)));
  r.generation++;
}

bool register_kernel_at_load(KernelDef kernel) {
  register_kernel(std::move(kernel));
  return true;
}

bool register_kernel_at_load(const char* op, DeviceType backend, DTypeSet dtypes, KernelFn fn,
                             SupportsFn supports, KernelImpl impl) {
  KernelDef k;
  k.op = op;
  k.backend = backend;
  k.dtypes = dtypes;
  k.fn = std::move(fn);
  k.supports = std::move(supports);
  k.impl = std::move(impl);
  register_kernel(std::move(k));
  return true;
}

bool register_elementwise_kernel_at_load(const char* op, DeviceType backend, DTypeSet dtypes, KernelFn fn) {
  KernelDef k;
  k.op = op;
  k.backend = backend;
  k.dtypes = dtypes;
  k.fn = std::move(fn);
  k.layout_agnostic = true;
  register_kernel(std::move(k));
  return true;
}

std::string kernel_label(const KernelDef& k) {
  return str(device_type_name(k.backend), " kernel", k.impl.name.empty() ? "" : str(" '", k.impl.name, "'"),
             k.source == "builtin" ? "" : str(" from ", k.source));
}

LayoutSides LayoutSides::parse(const std::string& code) {
  LayoutSides s;
  size_t colon = code.find(':');
  size_t n = colon == std::string::npos ? code.size() : colon;
  for (size_t i = 0; i < n && i < 64; ++i)
    if (code[i] == '1') s.inputs |= uint64_t{1} << i;
  s.output = colon != std::string::npos && colon + 1 < code.size() && code[colon + 1] == '1';
  return s;
}

std::string LayoutSides::format(uint64_t inputs, size_t n_inputs, bool output) {
  std::string code;
  for (size_t i = 0; i < n_inputs && i < 64; ++i) code += ((inputs >> i) & 1) ? '1' : '0';
  return code + (output ? ":1" : ":0");
}

const OpSchema* find_op(std::string_view name) {
  detail::ensure_env_plugins();  // PORTA_PLUGIN_PATH is read at the first lookup
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  return find_locked(r, name);
}

const OpSchema* find_op(std::string_view domain, std::string_view name) {
  detail::ensure_env_plugins();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  auto it = r.ops.find(op_key(domain, name));
  return it == r.ops.end() ? nullptr : it->second.get();
}

std::string describe_unknown_op(std::string_view name) {
  detail::ensure_env_plugins();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  if (name.find("::") == std::string_view::npos) {
    std::string several;
    for (auto& [key, op] : r.ops)
      if (op->name == name) several += str(several.empty() ? "" : ", ", key);
    if (!several.empty())
      return str("op name '", name, "' is ambiguous: ops of that name exist in several domains (", several,
                 "); name one as domain::", name);
    return str("unknown op '", name, "' (in no domain; a plugin may provide it: list its library in PORTA_PLUGIN_PATH)");
  }
  std::string_view plain = name.substr(name.find("::") + 2);
  std::string elsewhere;
  for (auto& [key, op] : r.ops)
    if (op->name == plain) elsewhere += str(elsewhere.empty() ? "" : ", ", key);
  return str("unknown op '", name, "'", elsewhere.empty() ? "" : str(" (ops of that name: ", elsewhere, ")"));
}

std::vector<const OpSchema*> all_ops() {
  detail::ensure_env_plugins();
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<const OpSchema*> out;
  for (auto& [n, op] : r.ops) out.push_back(op.get());
  return out;
}

std::vector<const KernelDef*> kernels_for(const OpSchema& op) {
  detail::ensure_env_plugins();
  Registry& r = registry();
  {
    std::unique_lock lock(r.mutex);
    if (!r.disabled_loaded) load_disabled_locked(r);
  }
  std::shared_lock lock(r.mutex);
  std::vector<const KernelDef*> out;
  for (const KernelDef* k : kernels_of_locked(r, op))
    if (!is_disabled(r, *k, op)) out.push_back(k);
  return out;
}

std::vector<const KernelDef*> kernels_for(std::string_view op) {
  const OpSchema* schema = find_op(op);
  return schema ? kernels_for(*schema) : std::vector<const KernelDef*>();
}

namespace detail {

uint64_t registry_generation() { return registry().generation.load(); }

std::vector<std::string> registry_problems() {
  Registry& r = registry();
  std::shared_lock lock(r.mutex);
  std::vector<std::string> out;
  for (auto& [name, list] : r.kernels) {
    if (!find_locked(r, name))
      for (auto& k : list)
        out.push_back(str("[registry] ", device_type_name(k->backend), " kernel (", k->source,
                          ") registered for unknown op '", name, "'"));
  }
  for (auto& [name, op] : r.ops) {
    if (!op->reference && !op->composite)
      out.push_back(str("[registry] op '", name, "' has neither a reference nor a composite"));
  }
  return out;
}

std::vector<std::string> disabled_kernels() {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (!r.disabled_loaded) load_disabled_locked(r);
  std::vector<std::string> out;
  for (auto& e : r.disabled) out.push_back(e.text);
  return out;
}

std::vector<std::string> disabled_kernel_problems() {
  ensure_env_plugins();
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  if (!r.disabled_loaded) load_disabled_locked(r);
  return r.disabled_problems;
}

void reload_disabled_kernels() {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  load_disabled_locked(r);
  r.generation++;
}

void unregister_source(const std::string& source) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  for (auto& [name, list] : r.kernels)
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](auto& k) { return k->source == source; }),
               list.end());
  r.generation++;
}

void unregister_op(const std::string& key) {
  Registry& r = registry();
  std::unique_lock lock(r.mutex);
  // The schema is kept alive (moved to a graveyard): resolutions cached before may point at it.
  static auto* graveyard = new std::vector<std::unique_ptr<OpSchema>>();
  if (auto it = r.ops.find(key); it != r.ops.end()) {
    graveyard->push_back(std::move(it->second));
    r.ops.erase(it);
  }
  r.generation++;
}

}  // namespace detail

// ---- backends -----------------------------------------------------------------------------

void register_backend(std::unique_ptr<Backend> backend, std::string source) {
  if (!backend) throw InvalidArgument("[registry] register_backend was given no backend");
  DeviceType t = backend->type();
  if (device_type_name(t) == "invalid")
    throw InvalidArgument(str("[registry] backend reports device kind id ", int(t.id),
                              ", which was never registered (use register_device_type)"));
  BackendTable& b = backends();
  std::lock_guard lock(b.mutex);
  if (b.owned[t.id])
    throw InvalidArgument(str("[registry] a backend for device kind '", device_type_name(t),
                              "' is already registered (from ", b.sources[t.id], "); refusing a second one from ",
                              source));
  b.sources[t.id] = std::move(source);
  b.owned[t.id] = std::move(backend);
  b.slots[t.id].store(b.owned[t.id].get(), std::memory_order_release);
}

Backend* find_backend(DeviceType type) {
  return type.id < kMaxDeviceTypes ? backends().slots[type.id].load(std::memory_order_acquire) : nullptr;
}

std::string backend_source(DeviceType type) {
  BackendTable& b = backends();
  std::lock_guard lock(b.mutex);
  return type.id < kMaxDeviceTypes && b.owned[type.id] ? b.sources[type.id] : std::string();
}

namespace detail {
void unregister_backend(DeviceType type) {
  BackendTable& b = backends();
  std::lock_guard lock(b.mutex);
  if (type.id >= kMaxDeviceTypes || !b.owned[type.id]) return;
  b.slots[type.id].store(nullptr, std::memory_order_release);
  b.retired.push_back(std::move(b.owned[type.id]));
  b.sources[type.id].clear();
}
}  // namespace detail

Backend& backend_for(Device device) {
  Backend* b = find_backend(device.type);
  if (!b) {
    for (const UnbuiltBackend& u : backends_not_built())
      if (u.kind == device_type_name(device.type))
        throw BackendUnavailable(str("[device] ", device.str(), ": this porta was built without the ", u.kind,
                                     " backend (", u.reason, ")"));
    throw BackendUnavailable(str("[device] ", device.str(), ": no backend for device kind '",
                                 device_type_name(device.type),
                                 "' is registered (not built into this porta, or its plugin is not loaded)"));
  }
  if (device.index < 0 || device.index >= b->device_count())
    throw BackendUnavailable(str("[device] ", device.str(), ": no such device (", b->device_count(),
                                 " ", device_type_name(device.type), " device(s))"));
  Availability a = b->availability(device.index);
  if (!a.available) throw BackendUnavailable(str("[device] ", device.str(), " unavailable: ", a.detail));
  return *b;
}

std::vector<Device> all_devices() {
  detail::ensure_env_plugins();
  std::vector<Device> out;
  for (DeviceType t : device_types()) {
    Backend* b = find_backend(t);
    if (!b) continue;
    int n = std::max(1, b->device_count());
    for (int i = 0; i < n; ++i) out.push_back(Device{t, i});
  }
  return out;
}

std::vector<UnbuiltBackend> backends_not_built() {
  // Written by third_party/backends.cmake at configure time: {"kind", "reason"},...
  static const UnbuiltBackend kNotBuilt[] = {
#include "porta_not_built.inc"
      {"", ""}};
  std::vector<UnbuiltBackend> out;
  for (const UnbuiltBackend& u : kNotBuilt) {
    if (u.kind.empty()) continue;
    std::optional<DeviceType> t = find_device_type(u.kind);
    if (t && find_backend(*t)) continue;  // a plugin provides it now
    out.push_back(u);
  }
  return out;
}

std::vector<DeviceType> built_backends() {
  std::vector<DeviceType> out;
  for (DeviceType t : device_types())
    if (find_backend(t)) out.push_back(t);
  return out;
}

}  // namespace porta
