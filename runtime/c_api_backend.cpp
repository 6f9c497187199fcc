// porta runtime — C ABI: device backends implemented by plugins (porta_backend_def), device
// kind lookups by name, and tensors' backend handles.
//
// A PluginBackend adapts a porta_backend_def to the Backend interface: every call goes to the
// plugin's function, and a non-OK status comes back as porta's own error, with the plugin's
// message (porta_set_error) and the device named.
#include <algorithm>
#include <cstring>

#include "porta/plugin.h"
#include "porta/porta.hpp"
#include "runtime/c_api_handles.hpp"
#include "runtime/plugin_staging.hpp"

using namespace porta;
using namespace porta::capi;

namespace {

class PluginBackend final : public Backend {
 public:
  PluginBackend(const porta_backend_def& def, DeviceType type) : def_(def), type_(type) {
    def_.name = nullptr;  // the plugin's string is not kept; device_type_name has the name
  }

  DeviceType type() const override { return type_; }
  int device_count() const override { return std::max(0, def_.device_count(def_.user_data)); }

  Availability availability(int index) const override {
    char detail[256] = {0};
    int available = 0;
    clean();
    porta_status s = def_.availability(def_.user_data, index, &available, detail, sizeof detail);
    detail[sizeof detail - 1] = '\0';
    if (s != PORTA_OK) return {false, str("availability check failed: ", last_error())};
    return {available != 0, detail};
  }

  Capabilities capabilities(int index) const override {
    porta_backend_caps c;
    std::memset(&c, 0, sizeof c);
    c.struct_size = sizeof c;
    c.subgroup_size = 1;
    clean();
    check(def_.capabilities(def_.user_data, index, &c), index, "capabilities");
    Capabilities out;
    out.name = c.name ? c.name : "";
    out.type = c.type ? c.type : "";
    out.total_memory = static_cast<size_t>(c.total_memory);
    out.max_buffer_bytes = c.max_buffer_bytes ? static_cast<size_t>(c.max_buffer_bytes) : SIZE_MAX;
    out.dtypes = c.dtypes & ((1u << kNumDTypes) - 1);
    out.subgroup_size = c.subgroup_size > 0 ? c.subgroup_size : 1;
    out.preference = c.preference;
    out.extra.emplace_back("backend", str("plugin ", backend_source(type_)));
    out.extra.emplace_back("dtypes", dtype_set_names(out.dtypes));
    return out;
  }

  void* allocate(int index, size_t bytes) override {
    void* handle = nullptr;
    clean();
    porta_status s = def_.allocate(def_.user_data, index, bytes, &handle);
    if (s == PORTA_ERROR_OUT_OF_MEMORY)
      throw OutOfMemory(str("[", where(index), "] out of memory: requested ", bytes, " bytes (",
                            message_or("the plugin gave no reason"), ")"));
    check(s, index, str("allocate(", bytes, " bytes)"));
    if (!handle && bytes > 0)
      throw BackendError(str("[", where(index), "] allocate(", bytes, " bytes) returned PORTA_OK and no handle"));
    return handle;
  }

  void deallocate(int index, void* handle, size_t bytes) noexcept override {
    def_.deallocate(def_.user_data, index, handle, bytes);
  }

  void copy_from_host(int index, void* dst, size_t dst_offset, const void* src, size_t bytes) override {
    clean();
    check(def_.copy_from_host(def_.user_data, index, dst, dst_offset, src, bytes), index, "copy_from_host");
  }
  void copy_to_host(int index, void* dst, const void* src, size_t src_offset, size_t bytes) override {
    clean();
    check(def_.copy_to_host(def_.user_data, index, dst, src, src_offset, bytes), index, "copy_to_host");
  }
  void copy_on_device(int index, void* dst, size_t dst_offset, const void* src, size_t src_offset,
                      size_t bytes) override {
    clean();
    check(def_.copy_on_device(def_.user_data, index, dst, dst_offset, src, src_offset, bytes), index,
          "copy_on_device");
  }
  void synchronize(int index) override {
    clean();
    check(def_.synchronize(def_.user_data, index), index, "synchronize");
  }

  void* kernel_pointer(void* handle, size_t byte_offset) const override {
    if (!def_.pointer_handles) return nullptr;
    return static_cast<char*>(handle) + byte_offset;
  }

 private:
  std::string where(int index) const { return Device{type_, index}.str(); }
  static std::string message_or(const char* fallback) {
    return last_error().empty() ? std::string(fallback) : last_error();
  }
  // Every plugin call that reports through check() starts with a clean message.
  static porta_status clean() { return set_error(PORTA_OK, ""); }
  void check(porta_status s, int index, const std::string& what) const {
    if (s == PORTA_OK) return;
    throw_status(s, str("[", where(index), "] ", what, " failed (", porta_status_name(s), "): ",
                        message_or("the plugin gave no reason")));
  }

  porta_backend_def def_;
  DeviceType type_;
};

[[noreturn]] void refuse(porta_status s, const std::string& message) {
  if (auto* st = detail::current_staging()) st->refused.push_back(message);
  throw StatusError(s, message);
}

}  // namespace

extern "C" {

porta_status porta_register_backend(const porta_backend_def* def) {
  PORTA_C_GUARD({
    const char* fn = "porta_register_backend";
    if (!def) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] backend should not be NULL"));
    if (def->struct_size < sizeof(porta_backend_def))
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] backend struct_size should be at least ",
                                               sizeof(porta_backend_def), ", got ", def->struct_size));
    if (!def->name || !*def->name)
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] name should be a non-empty device kind name"));
    std::string name = def->name;
    const std::pair<const void*, const char*> needed[] = {
        {reinterpret_cast<const void*>(def->device_count), "device_count"},
        {reinterpret_cast<const void*>(def->availability), "availability"},
        {reinterpret_cast<const void*>(def->capabilities), "capabilities"},
        {reinterpret_cast<const void*>(def->allocate), "allocate"},
        {reinterpret_cast<const void*>(def->deallocate), "deallocate"},
        {reinterpret_cast<const void*>(def->copy_from_host), "copy_from_host"},
        {reinterpret_cast<const void*>(def->copy_to_host), "copy_to_host"},
        {reinterpret_cast<const void*>(def->copy_on_device), "copy_on_device"},
        {reinterpret_cast<const void*>(def->synchronize), "synchronize"}};
    for (auto& [p, what] : needed)
      if (!p) refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] backend '", name, "' has no ", what, " function"));
    if (auto t = find_device_type(name); t && t->id < kNumBuiltinDeviceTypes)
      refuse(PORTA_ERROR_ALREADY_EXISTS, str("[", fn, "] device kind '", name,
                                             "' is built into porta; a plugin backend needs a kind name of its own"));
    DeviceType type;
    try {
      type = register_device_type(name);
    } catch (const Error& e) {
      refuse(PORTA_ERROR_INVALID_ARGUMENT, str("[", fn, "] ", e.what()));
    }
    if (find_backend(type))
      refuse(PORTA_ERROR_ALREADY_EXISTS, str("[", fn, "] a backend for device kind '", name,
                                             "' is already registered (from ", backend_source(type), ")"));
    auto backend = std::make_unique<PluginBackend>(*def, type);
    if (auto* st = detail::current_staging()) {
      for (auto& b : st->backends)
        if (b->type() == type)
          refuse(PORTA_ERROR_ALREADY_EXISTS, str("[", fn, "] this plugin registers device kind '", name, "' twice"));
      st->backends.push_back(std::move(backend));
    } else {
      try {
        register_backend(std::move(backend), "c_api");
      } catch (const InvalidArgument& e) {
        refuse(PORTA_ERROR_ALREADY_EXISTS, e.what());  // registered by another thread meanwhile
      }
    }
  })
}

porta_status porta_device_type_find(const char* name, int32_t* type) {
  PORTA_C_GUARD({
    need(name, "porta_device_type_find", "name");
    need(type, "porta_device_type_find", "type");
    detail::ensure_env_plugins();
    auto t = find_device_type(name);
    if (!t) {
      std::string known;
      for (DeviceType k : device_types()) known += str(known.empty() ? "" : ", ", device_type_name(k));
      bad_argument(str("[porta_device_type_find] unknown device kind '", name, "', known kinds: ", known));
    }
    *type = t->id;
  })
}

porta_status porta_device_type_name(int32_t type, const char** name) {
  PORTA_C_GUARD({
    need(name, "porta_device_type_name", "name");
    std::string_view n = type >= 0 && type < kMaxDeviceTypes
                             ? device_type_name(DeviceType(static_cast<uint8_t>(type)))
                             : std::string_view("invalid");
    if (n == "invalid")
      bad_argument(str("[porta_device_type_name] ", type, " is no registered device kind id (0..",
                       device_types().size() - 1, ")"));
    *name = n.data();  // a std::string in porta's kind table: NUL-terminated, never freed
  })
}

porta_status porta_tensor_device_handle(porta_tensor tensor, void** handle, size_t* byte_offset) {
  PORTA_C_GUARD({
    const char* fn = "porta_tensor_device_handle";
    Tensor& t = data_tensor(tensor, fn);
    need(handle, fn, "handle");
    if (!t.defined()) bad_argument(str("[", fn, "] the tensor holds no data"));
    need(byte_offset, fn, "byte_offset");
    *handle = t.storage()->handle();
    *byte_offset = static_cast<size_t>(t.offset()) * dtype_size(t.dtype());
  })
}

}  // extern "C"
